package program

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labrunner/labrunner/drivers"
)

// What the programming tools say about themselves and about the cables
// they see, parsed from their own listings: openFPGALoader --list-fpga,
// --list-cables, --scan-usb and --Version; Quartus' jtagconfig. `labrunner
// doctor` asks the installed tools; `labrunner lab check`, which runs
// nothing, uses the list of the openFPGALoader release below.

// OpenFPGALoaderListVersion is the release whose --list-fpga output is
// embedded (openfpgaloader-0.10.0-list-fpga.txt, the tool's own output, as
// Debian ships it): what lab check knows openFPGALoader supports.
const OpenFPGALoaderListVersion = "0.10.0"

//go:embed openfpgaloader-0.10.0-list-fpga.txt
var openFPGALoaderList string

// FPGA is one row of openFPGALoader --list-fpga: a device it knows by its
// IDCODE.
type FPGA struct {
	IDCode       uint32
	Manufacturer string
	Family       string
	// Model as listed: one or more models separated by "/", '*' standing
	// for any letters (5CGT*5/5CGX*5).
	Model string
}

// PartList is what one openFPGALoader release supports.
type PartList struct {
	Version string // e.g. 0.10.0
	FPGAs   []FPGA
}

// KnownOpenFPGALoader returns the embedded list (OpenFPGALoaderListVersion).
func KnownOpenFPGALoader() *PartList {
	l, err := ParseListFPGA(openFPGALoaderList)
	if err != nil {
		panic("program: the embedded openFPGALoader list does not parse: " + err.Error())
	}
	return &PartList{Version: OpenFPGALoaderListVersion, FPGAs: l}
}

// ParseListFPGA parses openFPGALoader --list-fpga: a header line
// ("IDCode manufacturer family model"), then one device per line: the
// IDCODE in hex, the manufacturer, the family (which may hold spaces:
// "artix a7 35t") and the model (never with spaces).
func ParseListFPGA(out string) ([]FPGA, error) {
	var list []FPGA
	header := false
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if !header {
			if strings.EqualFold(f[0], "IDCode") {
				header = true
			}
			continue
		}
		if len(f) < 4 {
			return nil, fmt.Errorf("openFPGALoader --list-fpga line %d: %q is not IDCODE MANUFACTURER FAMILY MODEL", n, sc.Text())
		}
		id, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(f[0]), "0x"), 16, 32)
		if err != nil {
			return nil, fmt.Errorf("openFPGALoader --list-fpga line %d: IDCODE %q: %w", n, f[0], err)
		}
		list = append(list, FPGA{IDCode: uint32(id), Manufacturer: f[1], Family: strings.Join(f[2:len(f)-1], " "), Model: f[len(f)-1]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !header {
		return nil, fmt.Errorf("openFPGALoader --list-fpga: no header line (IDCode manufacturer family model): is this openFPGALoader?")
	}
	return list, nil
}

// Supports finds the listed device a board's part is: a part matches a
// model when the model (each "/" alternative, '*' standing for any
// letters) starts the part, dashes ignored ("xczu9eg" is
// "xczu9eg-ffvc900-1-e"; "5CGT*5" is "5CGTFD5C5F23I7").
func (l *PartList) Supports(part string) (FPGA, bool) {
	p := flatPart(part)
	if p == "" {
		return FPGA{}, false
	}
	for _, f := range l.FPGAs {
		for _, alt := range strings.Split(f.Model, "/") {
			if re := modelPattern(alt); re != nil && re.MatchString(p) {
				return f, true
			}
		}
	}
	return FPGA{}, false
}

func flatPart(s string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), "-", ""))
}

// modelPattern turns a model into a prefix pattern; nil for models that
// could match anything.
func modelPattern(model string) *regexp.Regexp {
	m := flatPart(model)
	if len(strings.ReplaceAll(m, "*", "")) < 3 {
		return nil
	}
	var b strings.Builder
	b.WriteString("^")
	for i, part := range strings.Split(m, "*") {
		if i > 0 {
			b.WriteString("[a-z0-9]*")
		}
		b.WriteString(regexp.QuoteMeta(part))
	}
	return regexp.MustCompile(b.String())
}

// ParseListCables parses openFPGALoader --list-cables: a header line
// ("cable name vid:pid"), then a cable name and its USB ids per line.
func ParseListCables(out string) ([]string, error) {
	var names []string
	header := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if !header {
			header = strings.EqualFold(f[0], "cable") && len(f) > 1 && strings.EqualFold(f[1], "name")
			continue
		}
		names = append(names, f[0])
	}
	if !header {
		return nil, fmt.Errorf("openFPGALoader --list-cables: no header line (cable name vid:pid): is this openFPGALoader?")
	}
	return names, nil
}

// USBProbe is one row of openFPGALoader --scan-usb: a JTAG probe on USB.
type USBProbe struct {
	Bus, Device  int
	VIDPID       string // 0x0403:0x6010
	Type         string // FTDI2232, ft4232, dirtyJtag ...
	Manufacturer string
	Serial       string // "" when the probe has none
	Product      string
}

// ParseScanUSB parses openFPGALoader --scan-usb: optional lines before the
// header ("empty", "found N USB device"), the header ("Bus device vid:pid
// probe type manufacturer serial product"), then one probe per line: bus
// and device numbers, the USB ids, the probe type, the manufacturer (one
// word), the serial ("none" when it has none) and the product (the rest).
func ParseScanUSB(out string) ([]USBProbe, error) {
	var probes []USBProbe
	header := false
	for n, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if !header {
			header = f[0] == "Bus" && len(f) > 1 && f[1] == "device"
			continue
		}
		if len(f) < 6 {
			return nil, fmt.Errorf("openFPGALoader --scan-usb line %d: %q is not BUS DEVICE VID:PID TYPE MANUFACTURER SERIAL PRODUCT", n+1, line)
		}
		bus, err1 := strconv.Atoi(f[0])
		dev, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil || !strings.Contains(f[2], ":") {
			return nil, fmt.Errorf("openFPGALoader --scan-usb line %d: %q does not start with bus, device and vid:pid", n+1, line)
		}
		p := USBProbe{Bus: bus, Device: dev, VIDPID: f[2], Type: f[3], Manufacturer: f[4], Serial: f[5], Product: strings.Join(f[6:], " ")}
		if strings.EqualFold(p.Serial, "none") {
			p.Serial = ""
		}
		probes = append(probes, p)
	}
	if !header {
		return nil, fmt.Errorf("openFPGALoader --scan-usb: no header line (Bus device vid:pid ...): is this openFPGALoader?")
	}
	return probes, nil
}

var versionRe = regexp.MustCompile(`v?(\d+\.\d+(?:\.\d+)?)`)

// ParseVersion finds a tool's version in what it prints for --Version or
// --version ("openFPGALoader v0.10.0", "Version 20.1.0 Build 711 ..."):
// the first dotted number; "" when there is none.
func ParseVersion(out string) string {
	if m := versionRe.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return ""
}

// JTAGCable is one cable jtagconfig lists, with the devices on its chain.
type JTAGCable struct {
	Name    string   // as quartus_pgm -c takes it: "DE5-Net [1-1.2]"
	Devices []string // "029070DD 5SGXEA7H(1|2|3)/.."
}

var (
	jtagCableRe  = regexp.MustCompile(`^\s*\d+\)\s+(\S.*?)\s*$`)
	jtagDeviceRe = regexp.MustCompile(`^\s+([0-9A-Fa-f]{8})\s*(.*?)\s*$`)
)

// ParseJTAGConfig parses Quartus' jtagconfig: "1) DE5-Net [1-1.2]" per
// cable, each followed by its chain's devices, indented ("  029070DD
// 5SGXEA7H(1|2|3)/.."). A cable that cannot scan its chain is listed with
// an indented error line, kept as a device line. "No JTAG hardware
// available" gives no cables and no error.
func ParseJTAGConfig(out string) ([]JTAGCable, error) {
	var cables []JTAGCable
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if m := jtagCableRe.FindStringSubmatch(line); m != nil {
			cables = append(cables, JTAGCable{Name: m[1]})
			continue
		}
		if len(cables) > 0 && (line[0] == ' ' || line[0] == '\t') {
			if m := jtagDeviceRe.FindStringSubmatch(line); m != nil {
				cables[len(cables)-1].Devices = append(cables[len(cables)-1].Devices, strings.TrimSpace(m[1]+" "+m[2]))
			} else {
				cables[len(cables)-1].Devices = append(cables[len(cables)-1].Devices, strings.TrimSpace(line))
			}
		}
	}
	return cables, nil
}

// Query runs a tool read-only (a listing, its version) and returns what it
// printed on stdout and stderr together, at most 1 MiB. It never waits
// beyond ctx's deadline (default 10 s): the tool's whole process group is
// killed then. A tool that exits non-zero returns its output with the error.
func Query(ctx context.Context, path string, args ...string) (string, error) {
	ctx, cancel := drivers.Deadline(ctx, 10*time.Second)
	defer cancel()
	var out limitedOutput
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = waitDelay
	ownProcessGroup(cmd)
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.String(), fmt.Errorf("%s %s did not answer in time: %w (%w)", filepath.Base(path), strings.Join(args, " "), drivers.ErrTimeout, ctx.Err())
	}
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %w", filepath.Base(path), strings.Join(args, " "), err)
	}
	return out.String(), nil
}

// limitedOutput keeps the first MiB a tool prints.
type limitedOutput struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *limitedOutput) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := 1<<20 - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (l *limitedOutput) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// ListOpenFPGALoader asks an installed openFPGALoader (tool: a path, or ""
// for the one on PATH) what it supports: its version and --list-fpga.
func ListOpenFPGALoader(ctx context.Context, tool string) (*PartList, error) {
	path, err := (&OpenFPGALoader{Tool: tool}).tool().resolve("")
	if err != nil {
		return nil, err
	}
	v, err := Query(ctx, path, "--Version")
	if err != nil {
		return nil, err
	}
	out, err := Query(ctx, path, "--list-fpga")
	if err != nil {
		return nil, err
	}
	l, err := ParseListFPGA(out)
	if err != nil {
		return nil, err
	}
	return &PartList{Version: ParseVersion(v), FPGAs: l}, nil
}
