package labconfig

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/labrunner/labrunner/internal/strictyaml"
)

// ProgrammerTypes are the programmer types a lab file may name.
// "none" is a board whose design is fixed (the Verilator co-simulation of
// rtl/): it is never programmed.
var ProgrammerTypes = []string{"fpga_manager", "openfpgaloader", "xsdb", "quartus_pgm", "emulated", "none"}

// PowerTypes are the power types a lab file may name.
var PowerTypes = []string{"none", "gpio", "command"}

// jtagTools are the programmers that reach the FPGA through a JTAG cable, and
// so need the cable bound by USB path or serial number when a host has more
// than one (enumeration order changes between boots).
var jtagTools = map[string]bool{"openfpgaloader": true, "xsdb": true, "quartus_pgm": true}

// Sensible ranges for the emulated hardware and the cables.
const (
	maxClockPPM   = 1000   // crystal oscillators are within ±100 ppm; faults go beyond, not this far
	maxLatencyNS  = 1e6    // 1 ms: 200 km of fibre, beyond any lab cable
	maxBER        = 0.5    // a channel with BER 0.5 carries no information
	maxBaud       = 16e6   // fastest USB-UARTs (FT4232H: 12 Mbaud)
	maxPacingUS   = 100000 // 100 ms per byte would make a register access take minutes
	maxBootMS     = 600000
	maxRelTol     = 1.0 // a tolerance beyond 100 % accepts anything
	maxOffsetNS   = 1e12
	maxDeadline   = 24 * time.Hour
	maxThreshold  = 100.0
	boardNameHelp = "use letters, digits, '.', '_' and '-', starting with a letter or digit"
)

// maxRequestLatency bounds an emulated bridge's request latency: a
// USB-UART adds 0.125 to 16 ms to a round trip (a high-speed microframe to
// an FTDI chip's default latency timer); 1 s is far past any.
const maxRequestLatency = time.Second

var (
	nameRE     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	portInName = regexp.MustCompile(`\[[^\[\]]+\]\s*$`)
	pciDevRE   = regexp.MustCompile(`^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$`)
)

// checker validates a decoded lab, collecting every problem.
type checker struct {
	file   string
	lines  map[string]int
	broken map[string]bool // paths the decoder already reported
	known  Known
	errs   []Error
}

// add records a problem at the line of path when the decoder saw that key,
// else at fallback (the enclosing block).
func (c *checker) add(path string, fallback Pos, msg, fix string) {
	pos := fallback
	if l, ok := c.lines[path]; ok {
		pos = Pos{File: c.file, Line: l}
	}
	if pos.Line < 1 {
		pos.Line = 1
	}
	pos.File = c.file
	c.errs = append(c.errs, Error{Pos: pos, Field: path, Msg: msg, Fix: fix})
}

// given reports whether the lab file wrote key path with a value that
// decoded (a value that did not decode was reported already).
func (c *checker) given(path string) bool {
	_, ok := c.lines[path]
	return ok && !c.broken[path]
}

func sortErrors(errs []Error) {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Pos.Line < errs[j].Pos.Line })
}

// oneOf checks that v is in known (when known is non-empty), suggesting the
// nearest name.
func (c *checker) oneOf(path string, at Pos, what, v string, known []string) bool {
	return c.oneOfMsg(path, at, fmt.Sprintf("unknown %s %q", what, v), v, known)
}

func (c *checker) oneOfMsg(path string, at Pos, msg, v string, known []string) bool {
	if len(known) == 0 {
		return true
	}
	for _, k := range known {
		if k == v {
			return true
		}
	}
	if n := strictyaml.Nearest(v, known); n != "" {
		c.add(path, at, fmt.Sprintf("%s (known: %s)", msg, strings.Join(known, ", ")), "did you mean "+n+"?")
	} else {
		c.add(path, at, msg, "use one of: "+strings.Join(known, ", "))
	}
	return false
}

func (c *checker) lab(l *Lab) {
	top := l.Pos
	if l.Name == "" {
		c.add("lab", top, "the lab has no name", "add lab: NAME at the top")
	}
	c.deadlines(&l.Deadlines, top)
	if l.Results.Root == "" {
		l.Results.Root = DefaultResultsRoot
	}
	for _, k := range sortedKeys(l.Results.Thresholds) {
		v := l.Results.Thresholds[k]
		if v < 0 || v > maxThreshold {
			c.add("results.thresholds."+k, top, fmt.Sprintf("threshold %g is outside 0..%g", v, maxThreshold), "write the relative change that counts as a regression, e.g. 0.05 for 5 %")
		}
	}
	if l.Influx != nil {
		c.influx(l.Influx)
	}
	if l.Locks != nil {
		if l.Locks.Dir == "" {
			c.add("locks.dir", l.Locks.Pos, "locks need a directory", "add dir: /var/lock/labrunner (shared by everyone using the rack)")
		}
		if l.Locks.Lease < 0 {
			c.add("locks.lease", l.Locks.Pos, "lease must not be negative", `write a duration, e.g. "10m"`)
		}
	}
	if len(l.Boards) == 0 {
		c.add("boards", top, "the lab has no boards", "add a boards: list")
	}
	names := map[string]int{} // board name -> index
	for i := range l.Boards {
		c.board(l, i, names)
	}
	c.cables(l)
	cabled := c.links(l, names)
	c.plans(l, names)
	c.faults(l, names, cabled)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (c *checker) deadlines(d *Deadlines, top Pos) {
	fields := []struct {
		key string
		v   *time.Duration
		def time.Duration
	}{
		{"register", &d.Register, DefaultDeadlines.Register},
		{"program", &d.Program, DefaultDeadlines.Program},
		{"console", &d.Console, DefaultDeadlines.Console},
		{"test", &d.Test, DefaultDeadlines.Test},
		{"power", &d.Power, DefaultDeadlines.Power},
	}
	for _, f := range fields {
		p := "deadlines." + f.key
		switch {
		case *f.v < 0 || (*f.v == 0 && c.given(p)):
			c.add(p, top, fmt.Sprintf("deadline %v must be more than 0", *f.v), fmt.Sprintf("write a duration such as %q, or leave it out for the default", f.def.String()))
		case *f.v > maxDeadline:
			c.add(p, top, fmt.Sprintf("deadline %v is longer than %v", *f.v, maxDeadline), "nothing in a lab should wait that long")
		case *f.v == 0:
			*f.v = f.def
		}
	}
}

func (c *checker) influx(in *Influx) {
	if in.URL == "" {
		c.add("influx.url", in.Pos, "influx needs a url", "add url: http://influx.example:8086")
	} else if u, err := url.Parse(in.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		c.add("influx.url", in.Pos, fmt.Sprintf("%q is not an http(s) URL", in.URL), "write it like http://host:8086")
	}
	if in.Org == "" {
		c.add("influx.org", in.Pos, "influx needs an org", "add org: NAME")
	}
	if in.Bucket == "" {
		c.add("influx.bucket", in.Pos, "influx needs a bucket", "add bucket: NAME")
	}
}

func (c *checker) board(l *Lab, i int, names map[string]int) {
	b := &l.Boards[i]
	p := fmt.Sprintf("boards[%d]", i)
	switch {
	case b.Name == "":
		c.add(p+".name", b.Pos, "board has no name", "add name: NAME")
	case !nameRE.MatchString(b.Name):
		c.add(p+".name", b.Pos, fmt.Sprintf("board name %q is not usable in links (board:port)", b.Name), boardNameHelp)
	default:
		if j, dup := names[b.Name]; dup {
			c.add(p+".name", b.Pos, fmt.Sprintf("board name %q is used twice (first on line %d)", b.Name, l.Boards[j].Pos.Line), "give each board its own name")
		} else {
			names[b.Name] = i
		}
	}
	kindOK := false
	if b.Kind == "" {
		c.add(p+".kind", b.Pos, "board has no kind", "add kind: one of "+strings.Join(c.known.Kinds, ", "))
	} else {
		kindOK = c.oneOf(p+".kind", b.Pos, "board kind", b.Kind, c.known.Kinds)
	}
	emu := b.Emulated != nil
	if emu {
		c.emulated(p+".emulated", b.Emulated)
	}
	if b.Console != nil {
		c.serial(p+".console", b.Console, emu, DefaultConsoleBaud)
		c.lineEmulation(p+".console", b.Console, emu, false)
	}
	c.bus(p+".bus", b, emu)
	c.programmer(p+".programmer", b, emu, kindOK)
	c.power(p+".power", b, emu)
	for j, t := range b.Tags {
		if strings.TrimSpace(t) == "" {
			c.add(fmt.Sprintf("%s.tags[%d]", p, j), b.Pos, "empty tag", "remove it")
		}
	}
}

func (c *checker) emulated(p string, e *Emulated) {
	if e.ClockPPM < -maxClockPPM || e.ClockPPM > maxClockPPM {
		c.add(p+".clock_ppm", e.Pos, fmt.Sprintf("clock error %g ppm is outside ±%d ppm", e.ClockPPM, maxClockPPM), "oscillators are within ±100 ppm; inject the slow-clock fault for more")
	}
	if e.OffsetNS < -maxOffsetNS || e.OffsetNS > maxOffsetNS {
		c.add(p+".offset_ns", e.Pos, fmt.Sprintf("clock offset %g ns is outside ±%g ns", e.OffsetNS, maxOffsetNS), "")
	}
	if e.BootMS < 0 || e.BootMS > maxBootMS {
		c.add(p+".boot_ms", e.Pos, fmt.Sprintf("boot time %d ms is outside 0..%d", e.BootMS, maxBootMS), "")
	}
}

// serial checks a console or bridge port and fills its default baud rate.
func (c *checker) serial(p string, s *Serial, emu bool, defBaud int) {
	switch {
	case s.Port == "":
		fix := "add port: /dev/serial/by-id/... (by-id names survive reboots)"
		if emu {
			fix = "add port: emu"
		}
		c.add(p+".port", s.Pos, "no port given", fix)
	case s.Port == "emu" && !emu:
		c.add(p+".port", s.Pos, "port emu exists only on emulated boards", "give the device path of the USB-UART, or add an emulated: block to the board")
	case s.Port != "emu" && emu:
		c.add(p+".port", s.Pos, fmt.Sprintf("an emulated board serves its UARTs itself, not on %s", s.Port), "write port: emu")
	}
	switch {
	case s.Baud == 0 && !c.given(p+".baud"):
		s.Baud = defBaud
	case s.Baud <= 0 || s.Baud > maxBaud:
		c.add(p+".baud", s.Pos, fmt.Sprintf("baud %d is outside 1..%d", s.Baud, int(maxBaud)), fmt.Sprintf("write baud: %d or leave it out", defBaud))
	}
	if s.PacingUS < 0 || s.PacingUS > maxPacingUS {
		c.add(p+".pacing_us", s.Pos, fmt.Sprintf("pacing %d µs is outside 0..%d", s.PacingUS, maxPacingUS), "")
	}
}

// lineEmulation checks the keys that shape an emulated bridge's line: they
// mean nothing on a real USB-UART (which has its own line rate and latency)
// or on a console, and a lab that gave them there expects an effect it would
// not get.
func (c *checker) lineEmulation(p string, s *Serial, emu, bridge bool) {
	given := c.given(p+".line_rate") || c.given(p+".request_latency")
	switch {
	case !given:
		return
	case !bridge:
		c.add(p, s.Pos, "line_rate and request_latency shape the emulated UART bridge only, not a console", "remove them here; give them under bus: {uart_bridge: {...}}")
		return
	case !emu || s.Port != "emu":
		c.add(p, s.Pos, "line_rate and request_latency shape an emulated bridge line; a real USB-UART has its own", "remove them, or make the board emulated (port: emu)")
		return
	}
	if s.RequestLatency < 0 || s.RequestLatency > maxRequestLatency {
		c.add(p+".request_latency", s.Pos, fmt.Sprintf("request latency %v is outside 0..%v", s.RequestLatency, maxRequestLatency),
			"write e.g. request_latency: 1ms (a USB-UART with its latency timer at 1 ms)")
	}
}

func (c *checker) bus(p string, b *Board, emu bool) {
	bus := &b.Bus
	at := bus.Pos
	if at.Line == 0 {
		at = b.Pos
	}
	var set []string
	if bus.MMIO != nil {
		set = append(set, "mmio")
	}
	if bus.UARTBridge != nil {
		set = append(set, "uart_bridge")
	}
	if bus.Emulated != nil {
		set = append(set, "emulated")
	}
	switch {
	case len(set) > 1:
		c.add(p, at, fmt.Sprintf("more than one bus given (%s)", strings.Join(set, " and ")), "keep exactly one of mmio, uart_bridge, emulated")
		return
	case len(set) == 0 && b.DCN:
		c.add(p, at, "no bus given for a board the runner reaches directly (dcn: true)", "give exactly one of mmio, uart_bridge, emulated")
		return
	case len(set) == 0:
		return // reached in-band through its neighbours
	}
	switch set[0] {
	case "emulated":
		if !emu {
			c.add(p+".emulated", at, "the emulated bus exists only on emulated boards", "use mmio or uart_bridge, or add an emulated: block to the board")
		}
	case "mmio":
		m := bus.MMIO
		if emu {
			c.add(p+".mmio", m.Pos, "an emulated board has no memory-mapped bus", "use bus: {emulated: {}} or {uart_bridge: {port: emu}}")
		}
		if m.Device == "" {
			c.add(p+".mmio.device", m.Pos, "mmio needs a device", "add device: /dev/uio0, /dev/mem or /sys/bus/pci/devices/.../resource0")
		}
		if m.Size == 0 {
			c.add(p+".mmio.size", m.Pos, "mmio needs a size", "add size:, e.g. 0x10000 for a 64 KiB address space")
		}
		if m.Base%4 != 0 || m.Size%4 != 0 {
			c.add(p+".mmio", m.Pos, fmt.Sprintf("base 0x%x and size 0x%x must be multiples of 4", m.Base, m.Size), "registers are 32-bit words")
		}
		if m.Base+m.Size < m.Base {
			c.add(p+".mmio", m.Pos, fmt.Sprintf("base 0x%x + size 0x%x overflows 64 bits", m.Base, m.Size), "")
		}
	case "uart_bridge":
		c.serial(p+".uart_bridge", bus.UARTBridge, emu, DefaultBridgeBaud)
		c.lineEmulation(p+".uart_bridge", bus.UARTBridge, emu, true)
	}
}

func (c *checker) programmer(p string, b *Board, emu, kindOK bool) {
	g := &b.Programmer
	at := g.Pos
	if at.Line == 0 {
		at = b.Pos
	}
	if g.Type == "" {
		fix := "add programmer: {type: ...}, one of " + strings.Join(ProgrammerTypes, ", ")
		if emu {
			fix = "add programmer: {type: emulated}"
		}
		c.add(p+".type", at, "no programmer type given", fix)
		return
	}
	if !c.oneOf(p+".type", at, "programmer type", g.Type, ProgrammerTypes) {
		return
	}
	switch {
	case emu && g.Type != "emulated":
		c.add(p+".type", at, fmt.Sprintf("an emulated board is programmed by the emulator, not %s", g.Type), "write type: emulated")
		return
	case !emu && g.Type == "emulated":
		c.add(p+".type", at, "the emulated programmer exists only on emulated boards", "add an emulated: block to the board, or name its real programmer")
		return
	}
	if fit, ok := c.known.Programmers[b.Kind]; kindOK && ok && len(fit) > 0 {
		found := false
		for _, f := range fit {
			found = found || f == g.Type
		}
		if !found {
			c.add(p+".type", at, fmt.Sprintf("a %s is not programmed with %s", b.Kind, g.Type), "use one of: "+strings.Join(fit, ", "))
		}
	}
	// Fields each type takes; the others are refused so that a setting that
	// would be ignored does not look like it took effect.
	allowed := map[string][]string{
		"fpga_manager":   {"sysfs", "firmware_dir", "manager"},
		"openfpgaloader": {"cable", "usb_path", "serial", "tool", "pci_device"},
		"xsdb":           {"cable", "usb_path", "serial", "tool", "pci_device"},
		"quartus_pgm":    {"cable", "usb_path", "serial", "tool", "pci_device"},
		"emulated":       {},
		"none":           {},
	}[g.Type]
	given := map[string]string{
		"sysfs": g.Sysfs, "firmware_dir": g.FirmwareDir, "manager": g.Manager, "cable": g.Cable,
		"usb_path": g.USBPath, "serial": g.Serial, "tool": g.Tool, "pci_device": g.PCIDevice,
	}
	for _, k := range sortedKeys(given) {
		if given[k] == "" {
			continue
		}
		ok := false
		for _, a := range allowed {
			ok = ok || a == k
		}
		if !ok {
			c.add(p+"."+k, at, fmt.Sprintf("%s does not apply to the %s programmer", k, g.Type), "remove it")
		}
	}
	switch g.Type {
	case "fpga_manager":
		if g.Sysfs == "" {
			g.Sysfs = DefaultSysfs
		}
		if g.FirmwareDir == "" {
			g.FirmwareDir = DefaultFirmwareDir
		}
		if g.Manager == "" {
			g.Manager = DefaultManager
		}
	case "openfpgaloader":
		if g.Cable == "" {
			c.add(p+".cable", at, "openFPGALoader needs a cable type", "add cable: digilent_hs2 (see openFPGALoader --list-cables)")
		}
	}
	if g.PCIDevice != "" && !pciDevRE.MatchString(g.PCIDevice) {
		c.add(p+".pci_device", at, fmt.Sprintf("%q is not a PCI address", g.PCIDevice), "write it as in /sys/bus/pci/devices, e.g. 0000:01:00.0")
	}
}

// cables checks that JTAG cables are bound unambiguously and that no serial
// device is claimed by two boards.
func (c *checker) cables(l *Lab) {
	users := map[string][]int{} // jtag tool -> boards
	for i := range l.Boards {
		if t := l.Boards[i].Programmer.Type; jtagTools[t] {
			users[t] = append(users[t], i)
		}
	}
	for _, tool := range sortedKeys(users) {
		idx := users[tool]
		if len(idx) < 2 {
			continue
		}
		for _, i := range idx {
			g := &l.Boards[i].Programmer
			// quartus_pgm's cable name carries its USB port: "DE5-Net [1-1.2]".
			bracketed := tool == "quartus_pgm" && portInName.MatchString(g.Cable)
			if g.USBPath == "" && g.Serial == "" && !bracketed {
				c.add(fmt.Sprintf("boards[%d].programmer", i), g.Pos, fmt.Sprintf("%d boards use %s, so each cable must be bound", len(idx), tool), "add usb_path: (e.g. 1-1.3) or serial: of the cable; enumeration order changes between boots")
			}
		}
	}
	type claim struct {
		board int
		line  int
	}
	usb, ser := map[string]claim{}, map[string]claim{}
	ports := map[string]claim{}
	for i := range l.Boards {
		b := &l.Boards[i]
		g := &b.Programmer
		if jtagTools[g.Type] {
			port := g.USBPath
			if m := portInName.FindString(g.Cable); port == "" && g.Type == "quartus_pgm" && m != "" {
				port = strings.Trim(strings.TrimSpace(m), "[]")
			}
			if prev, dup := usb[port]; dup && port != "" {
				c.add(fmt.Sprintf("boards[%d].programmer.usb_path", i), g.Pos, fmt.Sprintf("USB path %s is also bound to board %s (line %d)", port, l.Boards[prev.board].Name, prev.line), "each board has its own cable")
			} else if port != "" {
				usb[port] = claim{i, g.Pos.Line}
			}
			if prev, dup := ser[g.Serial]; dup && g.Serial != "" {
				c.add(fmt.Sprintf("boards[%d].programmer.serial", i), g.Pos, fmt.Sprintf("cable serial %s is also bound to board %s (line %d)", g.Serial, l.Boards[prev.board].Name, prev.line), "each board has its own cable")
			} else if g.Serial != "" {
				ser[g.Serial] = claim{i, g.Pos.Line}
			}
		}
		// A board may share one UART between console and bridge
		// (multiplexed frames); two boards cannot share one.
		seen := map[string]bool{}
		for j, s := range []*Serial{b.Console, b.Bus.UARTBridge} {
			if s == nil || s.Port == "" || s.Port == "emu" || seen[s.Port] {
				continue
			}
			seen[s.Port] = true
			path := fmt.Sprintf("boards[%d].%s.port", i, []string{"console", "bus.uart_bridge"}[j])
			if prev, dup := ports[s.Port]; dup {
				c.add(path, s.Pos, fmt.Sprintf("serial port %s is also used by board %s (line %d)", s.Port, l.Boards[prev.board].Name, prev.line), "each board has its own USB-UART")
			} else {
				ports[s.Port] = claim{i, s.Pos.Line}
			}
		}
	}
}

func (c *checker) power(p string, b *Board, emu bool) {
	w := &b.Power
	at := w.Pos
	if at.Line == 0 {
		at = b.Pos
	}
	if w.Type == "" {
		w.Type = "none"
	}
	if !c.oneOf(p+".type", at, "power type", w.Type, PowerTypes) {
		return
	}
	if emu && w.Type != "none" {
		c.add(p+".type", at, fmt.Sprintf("an emulated board is switched by the emulator, not by %s", w.Type), "write power: {type: none}")
		return
	}
	switch w.Type {
	case "gpio":
		if w.Pin == "" {
			c.add(p+".pin", at, "gpio power needs a pin", "add pin: GPIO17 (the periph.io name of the relay's pin)")
		}
	case "command":
		if len(w.On) == 0 || w.On[0] == "" {
			c.add(p+".on", at, "command power needs an on command", `add on: [pdu, "on", "3"] (an argument vector, run without a shell)`)
		}
		if len(w.Off) == 0 || w.Off[0] == "" {
			c.add(p+".off", at, "command power needs an off command", `add off: [pdu, "off", "3"]`)
		}
	}
	if w.Type != "gpio" && (w.Pin != "" || w.ActiveLow) {
		c.add(p+".pin", at, fmt.Sprintf("pin and active_low apply to gpio power, not %s", w.Type), "remove them or write type: gpio")
	}
	if w.Type != "command" && (len(w.On) > 0 || len(w.Off) > 0) {
		c.add(p+".on", at, fmt.Sprintf("on and off apply to command power, not %s", w.Type), "remove them or write type: command")
	}
}

// ParseEndpoint parses "board:port".
func ParseEndpoint(s string) (Endpoint, error) {
	b, p, ok := strings.Cut(s, ":")
	if !ok || b == "" || p == "" || strings.Contains(p, ":") {
		return Endpoint{}, fmt.Errorf("%q is not board:port", s)
	}
	return Endpoint{Board: strings.TrimSpace(b), Port: strings.TrimSpace(p)}, nil
}

// endpoint checks one end of a link or a fault's link.
func (c *checker) endpoint(l *Lab, path string, at Pos, raw string, names map[string]int) (Endpoint, bool) {
	if raw == "" {
		c.add(path, at, "no endpoint given", `write "board:port", e.g. "exa-00:sfp0"`)
		return Endpoint{}, false
	}
	e, err := ParseEndpoint(raw)
	if err != nil {
		c.add(path, at, err.Error(), `write "board:port", e.g. "exa-00:sfp0"`)
		return Endpoint{}, false
	}
	i, ok := names[e.Board]
	if !ok {
		c.add(path, at, fmt.Sprintf("no board named %q", e.Board), c.nearestBoard(l, e.Board))
		return e, false
	}
	kind := l.Boards[i].Kind
	ports, ok := c.known.Ports[kind]
	if !ok {
		return e, true
	}
	for _, p := range ports {
		if p == e.Port {
			return e, true
		}
	}
	fix := "a " + kind + " has no network ports"
	if len(ports) > 0 {
		fix = "a " + kind + " has " + strings.Join(ports, ", ")
		if n := strictyaml.Nearest(e.Port, ports); n != "" {
			fix = "did you mean " + n + "? " + fix
		}
	}
	c.add(path, at, fmt.Sprintf("board %s has no port %q", e.Board, e.Port), fix)
	return e, false
}

func (c *checker) nearestBoard(l *Lab, name string) string {
	var all []string
	seen := map[string]bool{}
	for _, b := range l.Boards {
		if b.Name != "" && !seen[b.Name] {
			seen[b.Name] = true
			all = append(all, b.Name)
		}
	}
	if n := strictyaml.Nearest(name, all); n != "" {
		return "did you mean " + n + "?"
	}
	return "boards: " + strings.Join(all, ", ")
}

// links checks the cables and returns the cabled endpoints.
func (c *checker) links(l *Lab, names map[string]int) map[Endpoint]int {
	cabled := map[Endpoint]int{} // endpoint -> line of its cable
	for i := range l.Links {
		k := &l.Links[i]
		p := fmt.Sprintf("links[%d]", i)
		a, okA := c.endpoint(l, p+".a", k.Pos, k.RawA, names)
		b, okB := c.endpoint(l, p+".b", k.Pos, k.RawB, names)
		if okA && okB && a == b {
			c.add(p, k.Pos, fmt.Sprintf("both ends are %s", a), "a cable joins two different ports")
			okB = false
		}
		for _, e := range []struct {
			ep   Endpoint
			ok   bool
			side string
		}{{a, okA, ".a"}, {b, okB, ".b"}} {
			if !e.ok {
				continue
			}
			if line, dup := cabled[e.ep]; dup {
				c.add(p+e.side, k.Pos, fmt.Sprintf("port %s is already cabled (line %d)", e.ep, line), "a port takes one cable; remove one of the links")
				continue
			}
			cabled[e.ep] = k.Pos.Line
		}
		k.A, k.B = a, b
		if k.LatencyNS < 0 || k.LatencyNS > maxLatencyNS {
			c.add(p+".latency_ns", k.Pos, fmt.Sprintf("latency %g ns is outside 0..%g", k.LatencyNS, maxLatencyNS), "1 m of cable is about 5 ns")
		}
		if k.AsymmetryNS < -maxLatencyNS || k.AsymmetryNS > maxLatencyNS || k.LatencyNS+k.AsymmetryNS < 0 {
			c.add(p+".asymmetry_ns", k.Pos, fmt.Sprintf("asymmetry %g ns makes the B->A delay %g ns", k.AsymmetryNS, k.LatencyNS+k.AsymmetryNS), "latency_ns + asymmetry_ns must be 0 or more")
		}
		if k.BER < 0 || k.BER > maxBER {
			c.add(p+".ber", k.Pos, fmt.Sprintf("bit error rate %g is outside 0..%g", k.BER, maxBER), "write e.g. 1e-12")
		}
	}
	return cabled
}

func (c *checker) plans(l *Lab, names map[string]int) {
	seen := map[string]int{}
	for i := range l.Plans {
		pl := &l.Plans[i]
		p := fmt.Sprintf("plans[%d]", i)
		switch {
		case pl.Name == "":
			c.add(p+".name", pl.Pos, "plan has no name", "add name: NAME")
		case !nameRE.MatchString(pl.Name):
			c.add(p+".name", pl.Pos, fmt.Sprintf("plan name %q is not a simple name", pl.Name), boardNameHelp)
		default:
			if line, dup := seen[pl.Name]; dup {
				c.add(p+".name", pl.Pos, fmt.Sprintf("plan name %q is used twice (first on line %d)", pl.Name, line), "give each plan its own name")
			} else {
				seen[pl.Name] = pl.Pos.Line
			}
		}
		designOK := false
		if pl.Design == "" {
			c.add(p+".design", pl.Pos, "plan has no design", "add design: one of "+strings.Join(c.known.Designs, ", "))
		} else {
			designOK = c.oneOf(p+".design", pl.Pos, "design", pl.Design, c.known.Designs)
		}
		if pl.Bitstream != "" {
			switch strings.ToLower(filepath.Ext(pl.Bitstream)) {
			case ".bit", ".bin", ".rbf", ".sof":
			default:
				c.add(p+".bitstream", pl.Pos, fmt.Sprintf("%s is not a bitstream file", pl.Bitstream), "give a .bit, .bin, .rbf or .sof file")
			}
		}
		if len(pl.Boards) == 0 {
			c.add(p+".boards", pl.Pos, "plan has no boards", "add boards: [{board: NAME}]")
		}
		inPlan := map[string]int{}
		for j := range pl.Boards {
			pb := &pl.Boards[j]
			bp := fmt.Sprintf("%s.boards[%d].board", p, j)
			if pb.Board == "" {
				c.add(bp, pb.Pos, "no board given", "write board: NAME")
				continue
			}
			if _, ok := names[pb.Board]; !ok {
				c.add(bp, pb.Pos, fmt.Sprintf("no board named %q", pb.Board), c.nearestBoard(l, pb.Board))
				continue
			}
			if line, dup := inPlan[pb.Board]; dup {
				c.add(bp, pb.Pos, fmt.Sprintf("board %s is already in this plan (line %d)", pb.Board, line), "list each board once")
				continue
			}
			inPlan[pb.Board] = pb.Pos.Line
		}
		if len(pl.Tests) == 0 {
			c.add(p+".tests", pl.Pos, "plan has no tests", "add tests: [{test: NAME}]")
		}
		for j := range pl.Tests {
			t := &pl.Tests[j]
			tp := fmt.Sprintf("%s.tests[%d]", p, j)
			if t.Name == "" {
				c.add(tp+".test", t.Pos, "no test named", "write test: NAME")
			} else if designOK {
				c.oneOfMsg(tp+".test", t.Pos, fmt.Sprintf("design %s has no test %q", pl.Design, t.Name), t.Name, c.known.Tests[pl.Design])
			}
			if tol := t.Tolerance; tol != nil {
				if tol.Rel == nil && tol.Abs == nil {
					c.add(tp+".tolerance", t.Pos, "tolerance gives neither rel nor abs", "write tolerance: {rel: 0.05} or remove it")
				}
				if tol.Rel != nil && (*tol.Rel < 0 || *tol.Rel > maxRelTol) {
					c.add(tp+".tolerance.rel", t.Pos, fmt.Sprintf("relative tolerance %g is outside 0..%g", *tol.Rel, maxRelTol), "write a fraction, e.g. 0.05 for 5 %")
				}
				if tol.Abs != nil && *tol.Abs < 0 {
					c.add(tp+".tolerance.abs", t.Pos, fmt.Sprintf("absolute tolerance %g is negative", *tol.Abs), "")
				}
			}
			switch {
			case t.Deadline < 0 || (t.Deadline == 0 && c.given(tp+".deadline")):
				c.add(tp+".deadline", t.Pos, fmt.Sprintf("deadline %v must be more than 0", t.Deadline), "write a duration such as \"30s\", or leave it out for deadlines.test")
			case t.Deadline > maxDeadline:
				c.add(tp+".deadline", t.Pos, fmt.Sprintf("deadline %v is longer than %v", t.Deadline, maxDeadline), "")
			case t.Deadline == 0:
				t.Deadline = l.Deadlines.Test
			}
		}
	}
}

func (c *checker) faults(l *Lab, names map[string]int, cabled map[Endpoint]int) {
	for i := range l.Faults {
		f := &l.Faults[i]
		p := fmt.Sprintf("faults[%d]", i)
		if f.Name == "" {
			c.add(p+".name", f.Pos, "fault has no name", "add name: one of "+strings.Join(c.known.Faults, ", "))
		} else {
			c.oneOf(p+".name", f.Pos, "fault", f.Name, c.known.Faults)
		}
		if f.Board != "" {
			if _, ok := names[f.Board]; !ok {
				c.add(p+".board", f.Pos, fmt.Sprintf("no board named %q", f.Board), c.nearestBoard(l, f.Board))
			}
		}
		if f.Link != "" {
			e, ok := c.endpoint(l, p+".link", f.Pos, f.Link, names)
			if ok {
				if _, isCabled := cabled[e]; !isCabled {
					c.add(p+".link", f.Pos, fmt.Sprintf("port %s has no cable in links:", e), "name a cabled port")
				}
				if f.Board != "" && f.Board != e.Board {
					c.add(p+".board", f.Pos, fmt.Sprintf("board %s is not the board of link %s", f.Board, f.Link), "leave board out for a link fault")
				}
			}
		}
	}
}
