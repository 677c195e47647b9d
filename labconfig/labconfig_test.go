package labconfig_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/labconfig"
)

// known is what the runner passes: board kinds and ports from boards, the
// exanet design and its tests.
func known() labconfig.Known {
	progs := map[string][]string{}
	for _, n := range boards.KindNames() {
		k, err := boards.Lookup(n)
		if err != nil {
			panic(err)
		}
		progs[n] = k.Programmers
	}
	return labconfig.Known{
		Kinds:       boards.KindNames(),
		Ports:       boards.PortsByKind(),
		Programmers: progs,
		Designs:     []string{"exanet"},
		Tests:       map[string][]string{"exanet": {"registers", "links", "bandwidth", "latency", "dor_path", "port_loopback"}},
		Faults:      []string{"board-silent", "slow-clock", "link-down", "credit-leak"},
	}
}

// exanetLab is the first default lab (the ExaNet mesh alone), kept as test
// data so that these detailed checks do not change every time the default
// lab gains a rack. cmd/labrunner checks that the embedded default lab
// loads with the real registries.
const exanetLab = "testdata/exanet-lab.yaml"

func TestExanetLabLoadsClean(t *testing.T) {
	lab, err := labconfig.Load(exanetLab, known())
	if err != nil {
		t.Fatalf("%s: %v", exanetLab, err)
	}
	if lab.Name != "emulated-rack" || lab.Seed != 20261123 {
		t.Errorf("name/seed = %q/%d", lab.Name, lab.Seed)
	}
	if lab.Pos.File != exanetLab || lab.Pos.Line < 1 {
		t.Errorf("lab pos = %v", lab.Pos)
	}
	if len(lab.Boards) != 4 || len(lab.Links) != 4 || len(lab.Plans) != 1 {
		t.Fatalf("boards/links/plans = %d/%d/%d", len(lab.Boards), len(lab.Links), len(lab.Plans))
	}
	// Deadlines given in the file are kept; the one left out takes its default.
	want := labconfig.Deadlines{Register: 2 * time.Second, Program: 60 * time.Second, Console: 10 * time.Second, Test: 120 * time.Second, Power: labconfig.DefaultDeadlines.Power}
	if lab.Deadlines != want {
		t.Errorf("deadlines = %+v, want %+v", lab.Deadlines, want)
	}
	if lab.Results.Root != "runs" {
		t.Errorf("results root = %q", lab.Results.Root)
	}
	b := lab.Boards[0]
	if b.Name != "exa-00" || b.Kind != "tebf0808" || !b.IsEmulated() || !b.DCN {
		t.Errorf("board 0 = %+v", b)
	}
	if b.Console == nil || b.Console.Port != "emu" || b.Console.Baud != 115200 {
		t.Errorf("console = %+v", b.Console)
	}
	if b.Bus.Kind() != "uart_bridge" || b.Bus.UARTBridge.Baud != 921600 {
		t.Errorf("bus = %+v", b.Bus)
	}
	if lab.Boards[3].Bus.Kind() != "emulated" {
		t.Errorf("exa-11 bus = %q", lab.Boards[3].Bus.Kind())
	}
	if b.Emulated.ClockPPM != 12.5 || b.Emulated.OffsetNS != 1200 {
		t.Errorf("emulated = %+v", b.Emulated)
	}
	if b.Power.Type != "none" || b.Programmer.Type != "emulated" {
		t.Errorf("power/programmer = %q/%q", b.Power.Type, b.Programmer.Type)
	}
	// Every Pos is filled and increases down the file.
	prev := 0
	for _, b := range lab.Boards {
		if b.Pos.File != exanetLab || b.Pos.Line <= prev {
			t.Errorf("board %s pos %v after line %d", b.Name, b.Pos, prev)
		}
		prev = b.Pos.Line
		if b.Console.Pos.Line != b.Pos.Line+4 || b.Power.Pos.Line != b.Pos.Line+7 {
			t.Errorf("board %s: console at %v, power at %v", b.Name, b.Console.Pos, b.Power.Pos)
		}
	}
	l := lab.Links[2]
	if l.A != (labconfig.Endpoint{Board: "exa-00", Port: "sfp1"}) || l.B != (labconfig.Endpoint{Board: "exa-01", Port: "sfp1"}) || l.LatencyNS != 5 {
		t.Errorf("link 2 = %+v", l)
	}
	pl := lab.Plans[0]
	if pl.Design != "exanet" || len(pl.Boards) != 4 || len(pl.Tests) != 8 {
		t.Fatalf("plan = %+v", pl)
	}
	lattice, err := pl.Params.Ints("lattice", nil)
	if err != nil || !reflect.DeepEqual(lattice, []int{2, 2, 1}) {
		t.Errorf("lattice = %v, %v", lattice, err)
	}
	if s, err := pl.Params.String("dor_order", ""); err != nil || s != "XYZ" {
		t.Errorf("dor_order = %q, %v", s, err)
	}
	coord, err := pl.Boards[1].Params.Ints("coord", nil)
	if err != nil || !reflect.DeepEqual(coord, []int{1, 0, 0}) {
		t.Errorf("coord of exa-10 = %v, %v", coord, err)
	}
	if b, ok := lab.Board("exa-11"); !ok || b.Bus.Kind() != "emulated" {
		t.Errorf("Board(exa-11) = %v, %v", b, ok)
	}
	if _, ok := lab.Board("nope"); ok {
		t.Error("Board(nope) found")
	}
	if p, ok := lab.Plan("exanet-mesh"); !ok || p != &lab.Plans[0] {
		t.Errorf("Plan = %v, %v", p, ok)
	}
	if got := lab.Resolve("x.bit"); got != "testdata/x.bit" {
		t.Errorf("Resolve = %q", got)
	}
	bw := pl.Tests[2]
	if bw.Name != "bandwidth" || bw.Deadline != 120*time.Second {
		t.Errorf("test 2 = %+v", bw)
	}
	payloads, err := bw.Params.Ints("payloads", nil)
	if err != nil || !reflect.DeepEqual(payloads, []int{32, 64, 128, 256, 512}) {
		t.Errorf("payloads = %v, %v", payloads, err)
	}
	if p := bw.Params["payloads"]; !p.List || p.Pos.Line != bw.Pos.Line+1 {
		t.Errorf("payloads param = %+v (test at %v)", p, bw.Pos)
	}
	if n, err := bw.Params.Int("packets", 0); err != nil || n != 2000 {
		t.Errorf("packets = %d, %v", n, err)
	}
	if err := bw.Params.Check("path", "payloads", "packets"); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// An emulated bridge's line shape is read as given; left out, the line is
// unpaced (the default lab's).
func TestBridgeLineEmulation(t *testing.T) {
	src := "lab: t\nboards:\n  - name: a\n    kind: tebf0808\n    emulated: {}\n    bus: {uart_bridge: {port: emu, baud: 115200, line_rate: true, request_latency: 1ms}}\n    programmer: {type: emulated}\n" +
		"  - name: b\n    kind: tebf0808\n    emulated: {}\n    bus: {uart_bridge: {port: emu}}\n    programmer: {type: emulated}\n"
	lab, err := labconfig.Parse("lab.yaml", []byte(src), known())
	if err != nil {
		t.Fatal(err)
	}
	a, b := lab.Boards[0].Bus.UARTBridge, lab.Boards[1].Bus.UARTBridge
	if !a.LineRate || a.RequestLatency != time.Millisecond || a.Baud != 115200 {
		t.Errorf("board a's bridge = %+v, want line_rate at 115200 baud and 1ms", *a)
	}
	if b.LineRate || b.RequestLatency != 0 || b.Baud != labconfig.DefaultBridgeBaud {
		t.Errorf("board b's bridge = %+v, want unpaced at the default baud", *b)
	}
}

func TestDefaultSourceIsTheEmbeddedFile(t *testing.T) {
	onDisk, err := os.ReadFile("default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if string(labconfig.DefaultSource()) != string(onDisk) {
		t.Fatal("DefaultSource differs from default.yaml")
	}
}

func TestLoadFromDisk(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lab.yaml")
	src, err := os.ReadFile(exanetLab)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	lab, err := labconfig.Load(path, known())
	if err != nil {
		t.Fatal(err)
	}
	if lab.Boards[0].Pos.File != path {
		t.Errorf("pos file = %q", lab.Boards[0].Pos.File)
	}
	if got := lab.Resolve("exanet.bit"); got != filepath.Join(dir, "exanet.bit") {
		t.Errorf("Resolve = %q", got)
	}
	if _, err := labconfig.Load(filepath.Join(dir, "missing.yaml"), known()); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// board is a minimal real board for the bad-file table.
const head = `lab: t
boards:
  - name: a
    kind: tebf0808
    console: {port: /dev/ttyUSB0}
    bus: {uart_bridge: {port: /dev/ttyUSB1}}
    programmer: {type: fpga_manager}
`

func TestBadFiles(t *testing.T) {
	cases := []struct {
		name string
		file string
		want []string // each must appear in the error, in order of lines
	}{
		{"unknown key suggests", head + "    power: {type: none, baudd: 3}\n",
			[]string{`lab.yaml:8: boards[0].power: unknown key "baudd" in boards[0].power (allowed: type, pin, active_low, on, off)`}},
		{"unknown key nearest", "lab: t\nboards:\n  - name: a\n    kind: tebf0808\n    console: {port: /dev/x, baudd: 9600}\n    bus: {emulated: {}}\n    programmer: {type: xsdb}\n",
			[]string{`lab.yaml:5: boards[0].console: unknown key "baudd"`, `(did you mean baud?)`}},
		{"two buses", "lab: t\nboards:\n  - name: a\n    kind: tebf0808\n    bus:\n      mmio: {device: /dev/uio0, size: 0x10000}\n      uart_bridge: {port: /dev/ttyUSB1}\n    programmer: {type: fpga_manager}\n",
			[]string{`lab.yaml:5: boards[0].bus: more than one bus given (mmio and uart_bridge) (keep exactly one of mmio, uart_bridge, emulated)`}},
		{"no bus on dcn board", "lab: t\nboards:\n  - name: a\n    kind: tebf0808\n    dcn: true\n    programmer: {type: xsdb}\n",
			[]string{`lab.yaml:3: boards[0].bus: no bus given`}},
		{"emulated bus on real board", "lab: t\nboards:\n  - name: a\n    kind: tebf0808\n    bus: {emulated: {}}\n    programmer: {type: xsdb}\n",
			[]string{`lab.yaml:5: boards[0].bus.emulated: the emulated bus exists only on emulated boards`}},
		{"emu port on real board", head + "  - name: b\n    kind: tebf0808\n    console: {port: emu}\n    bus: {mmio: {device: /dev/uio0, size: 4096}}\n    programmer: {type: fpga_manager}\n",
			[]string{`lab.yaml:10: boards[1].console.port: port emu exists only on emulated boards`}},
		{"unknown kind", "lab: t\nboards:\n  - name: a\n    kind: tebf0809\n    bus: {mmio: {device: /dev/uio0, size: 4096}}\n    programmer: {type: fpga_manager}\n",
			[]string{`lab.yaml:4: boards[0].kind: unknown board kind "tebf0809"`, `did you mean tebf0808?`}},
		{"duplicate board", head + "  - name: a\n    kind: zcu102\n    bus: {mmio: {device: /dev/uio0, size: 4096}}\n    programmer: {type: fpga_manager}\n",
			[]string{`lab.yaml:8: boards[1].name: board name "a" is used twice (first on line 3)`}},
		{"emulated programmer on real board", "lab: t\nboards:\n  - name: a\n    kind: tebf0808\n    bus: {mmio: {device: /dev/uio0, size: 4096}}\n    programmer: {type: emulated}\n",
			[]string{`lab.yaml:6: boards[0].programmer.type: the emulated programmer exists only on emulated boards`}},
		{"programmer does not fit kind", "lab: t\nboards:\n  - name: a\n    kind: de5net\n    bus: {mmio: {device: /sys/bus/pci/devices/0000:01:00.0/resource0, size: 4096}}\n    programmer: {type: fpga_manager}\n",
			[]string{`lab.yaml:6: boards[0].programmer.type: a de5net is not programmed with fpga_manager (use one of: quartus_pgm, openfpgaloader, emulated)`}},
		{"two jtag boards unbound", "lab: t\nboards:\n" +
			"  - name: a\n    kind: tebf0808\n    bus: {mmio: {device: /dev/uio0, size: 4096}}\n    programmer: {type: xsdb, usb_path: 1-1.2}\n" +
			"  - name: b\n    kind: tebf0808\n    bus: {mmio: {device: /dev/uio1, size: 4096}}\n    programmer: {type: xsdb}\n",
			[]string{`lab.yaml:10: boards[1].programmer: 2 boards use xsdb, so each cable must be bound`}},
		{"usb path twice", "lab: t\nboards:\n" +
			"  - name: a\n    kind: tebf0808\n    bus: {mmio: {device: /dev/uio0, size: 4096}}\n    programmer: {type: xsdb, usb_path: 1-1.2}\n" +
			"  - name: b\n    kind: tebf0808\n    bus: {mmio: {device: /dev/uio1, size: 4096}}\n    programmer: {type: xsdb, usb_path: 1-1.2}\n",
			[]string{`lab.yaml:10: boards[1].programmer.usb_path: USB path 1-1.2 is also bound to board a (line 6)`}},
		{"openfpgaloader needs cable", "lab: t\nboards:\n  - name: a\n    kind: de5net\n    bus: {mmio: {device: /dev/uio0, size: 4096}}\n    programmer: {type: openfpgaloader, pci_device: 01:00.0}\n",
			[]string{`lab.yaml:6: boards[0].programmer.cable: openFPGALoader needs a cable type`, `lab.yaml:6: boards[0].programmer.pci_device: "01:00.0" is not a PCI address`}},
		{"field not for type", head + "    power: {type: none}\n  - name: b\n    kind: tebf0808\n    bus: {mmio: {device: /dev/uio0, size: 4096}}\n    programmer: {type: fpga_manager, cable: hs2}\n",
			[]string{`lab.yaml:12: boards[1].programmer.cable: cable does not apply to the fpga_manager programmer`}},
		{"gpio needs pin", head + "    power: {type: gpio}\n",
			[]string{`lab.yaml:8: boards[0].power.pin: gpio power needs a pin`}},
		{"command needs on and off", head + "    power:\n      type: command\n      on: [pdu, on, \"3\"]\n",
			[]string{`lab.yaml:9: boards[0].power.off: command power needs an off command`}},
		{"unknown power type", head + "    power: {type: relay}\n",
			[]string{`lab.yaml:8: boards[0].power.type: unknown power type "relay" (use one of: none, gpio, command)`}},
		{"baud zero given", head + "  - name: b\n    kind: tebf0808\n    console: {port: /dev/ttyUSB2, baud: 0}\n    bus: {mmio: {device: /dev/uio0, size: 4096}}\n    programmer: {type: fpga_manager}\n",
			[]string{`lab.yaml:10: boards[1].console.baud: baud 0 is outside 1..16000000`}},
		{"baud not a number", head + "  - name: b\n    kind: tebf0808\n    console: {port: /dev/ttyUSB2, baud: fast}\n    bus: {mmio: {device: /dev/uio0, size: 4096}}\n    programmer: {type: fpga_manager}\n",
			[]string{`lab.yaml:10: boards[1].console.baud: want an integer that fits 64 bits, got "fast"`}},
		{"serial port shared", head + "  - name: b\n    kind: tebf0808\n    console: {port: /dev/ttyUSB0}\n    bus: {mmio: {device: /dev/uio0, size: 4096}}\n    programmer: {type: fpga_manager}\n",
			[]string{`lab.yaml:10: boards[1].console.port: serial port /dev/ttyUSB0 is also used by board a (line 5)`}},
		{"mmio misaligned", "lab: t\nboards:\n  - name: a\n    kind: tebf0808\n    bus:\n      mmio: {device: /dev/mem, base: 0xA0000002, size: 0x10000}\n    programmer: {type: fpga_manager}\n",
			[]string{`lab.yaml:6: boards[0].bus.mmio: base 0xa0000002 and size 0x10000 must be multiples of 4`}},
		{"link bad endpoint", head + "links:\n  - {a: \"a:sfp0\", b: \"a-sfp1\"}\n",
			[]string{`lab.yaml:9: links[0].b: "a-sfp1" is not board:port`}},
		{"link unknown board and port", head + "links:\n  - {a: \"b:sfp0\", b: \"a:sfp3\"}\n",
			[]string{`lab.yaml:9: links[0].a: no board named "b"`, `lab.yaml:9: links[0].b: board a has no port "sfp3" (did you mean sfp0? a tebf0808 has sfp0, sfp1)`}},
		{"port cabled twice", head + "links:\n  - {a: \"a:sfp0\", b: \"a:sfp1\"}\n  - a: a:sfp1\n    b: a:sfp0\n",
			[]string{`lab.yaml:10: links[1].a: port a:sfp1 is already cabled (line 9)`, `lab.yaml:11: links[1].b: port a:sfp0 is already cabled (line 9)`}},
		{"link ranges", head + "links:\n  - {a: \"a:sfp0\", b: \"a:sfp1\", latency_ns: -1, ber: 0.7}\n",
			[]string{`lab.yaml:9: links[0].latency_ns: latency -1 ns is outside 0..1e+06`, `lab.yaml:9: links[0].ber: bit error rate 0.7 is outside 0..0.5`}},
		{"plan unknown design", head + "plans:\n  - name: p\n    design: exanett\n    boards: [{board: a}]\n    tests: [{test: registers}]\n",
			[]string{`lab.yaml:10: plans[0].design: unknown design "exanett" (known: exanet) (did you mean exanet?)`}},
		{"plan unknown test and board", head + "plans:\n  - name: p\n    design: exanet\n    boards: [{board: a}, {board: b}, {board: a}]\n    tests:\n      - test: registerz\n      - test: latency\n        tolerance: {rel: 2}\n        deadline: 5\n",
			[]string{`lab.yaml:11: plans[0].boards[1].board: no board named "b"`, `lab.yaml:11: plans[0].boards[2].board: board a is already in this plan`,
				`lab.yaml:13: plans[0].tests[0].test: design exanet has no test "registerz"`, `(did you mean registers?)`,
				`lab.yaml:15: plans[0].tests[1].tolerance.rel: relative tolerance 2 is outside 0..1`,
				`lab.yaml:16: plans[0].tests[1].deadline: duration "5" has no unit`}},
		{"fault unknown", head + "links:\n  - {a: \"a:sfp0\", b: \"a:sfp1\"}\nfaults:\n  - {name: slow-clok, board: a}\n  - {name: link-down, link: \"a:sfp2\"}\n  - {name: board-silent, board: z}\n",
			[]string{`lab.yaml:11: faults[0].name: unknown fault "slow-clok"`, `did you mean slow-clock?`, `lab.yaml:12: faults[1].link: board a has no port "sfp2"`, `lab.yaml:13: faults[2].board: no board named "z"`}},
		{"bad deadline", "deadlines:\n  register: 2\n  program: -1s\n" + head,
			[]string{`lab.yaml:2: deadlines.register: duration "2" has no unit`, `lab.yaml:3: deadlines.program: deadline -1s must be more than 0`}},
		{"duplicate key", head + "    programmer: {type: xsdb}\n",
			[]string{`lab.yaml:8: boards[0].programmer: key "programmer" given twice (first on line 7)`}},
		{"wrong shape", "lab: t\nboards: {name: a}\n",
			[]string{`lab.yaml:2: boards: want a list, got a mapping`}},
		{"syntax error", "lab: t\nboards:\n  - name: a\n   kind: x\n",
			[]string{`lab.yaml:4: not valid YAML`}},
		{"empty file", "",
			[]string{`lab.yaml:1: the file is empty`}},
		{"no lab name, no boards", "seed: 1\n",
			[]string{`lab.yaml:1: lab: the lab has no name`, `lab.yaml:1: boards: the lab has no boards`}},
		{"param is a mapping", head + "plans:\n  - name: p\n    design: exanet\n    params: {x: {y: 1}, z: }\n    boards: [{board: a}]\n    tests: [{test: links}]\n",
			[]string{`lab.yaml:11: plans[0].params.x: a parameter is a value or a list of values, got a mapping`, `lab.yaml:11: plans[0].params.z: parameter has no value`}},
		{"influx incomplete", head + "influx: {url: \"ftp://x\"}\n",
			[]string{`lab.yaml:8: influx.url: "ftp://x" is not an http(s) URL`, `lab.yaml:8: influx.org: influx needs an org`}},
		{"emulated board must be emulated all through", "lab: t\nboards:\n  - name: a\n    kind: tebf0808\n    emulated: {clock_ppm: 5000}\n    console: {port: /dev/ttyUSB0}\n    bus: {mmio: {device: /dev/uio0, size: 4096}}\n    programmer: {type: xsdb}\n    power: {type: gpio, pin: GPIO4}\n",
			[]string{`lab.yaml:5: boards[0].emulated.clock_ppm: clock error 5000 ppm is outside ±1000 ppm`, `lab.yaml:6: boards[0].console.port: an emulated board serves its UARTs itself`,
				`lab.yaml:7: boards[0].bus.mmio: an emulated board has no memory-mapped bus`, `lab.yaml:8: boards[0].programmer.type: an emulated board is programmed by the emulator, not xsdb`,
				`lab.yaml:9: boards[0].power.type: an emulated board is switched by the emulator, not by gpio`}},
		{"locks and thresholds", "locks: {lease: -1s}\nresults: {thresholds: {\"*\": -0.1}}\n" + head,
			[]string{`lab.yaml:1: locks.dir: locks need a directory`, `lab.yaml:1: locks.lease: lease must not be negative`, `lab.yaml:2: results.thresholds.*: threshold -0.1 is outside 0..100`}},
		{"serial and emulated ranges", "lab: t\nboards:\n  - name: a\n    kind: tebf0808\n    emulated: {boot_ms: -1}\n    console: {pacing_us: 200000}\n    bus: {emulated: {}}\n    programmer: {type: emulated}\n    tags: [\"\"]\n",
			[]string{`lab.yaml:5: boards[0].emulated.boot_ms: boot time -1 ms is outside 0..600000`, `lab.yaml:6: boards[0].console.port: no port given (add port: emu)`, `lab.yaml:6: boards[0].console.pacing_us: pacing 200000 µs is outside 0..100000`, `lab.yaml:9: boards[0].tags[0]: empty tag`}},
		{"board name and plan details", "lab: t\nboards:\n  - name: \"a b\"\n    kind: tebf0808\n    bus: {mmio: {device: /dev/uio0, size: 4096}}\n    programmer: {type: fpga_manager}\n  - kind: tebf0808\n    programmer: {type: fpga_manager}\nplans:\n  - {name: p, design: exanet, bitstream: top.hex, boards: [{}], tests: [{test: links, tolerance: {}, deadline: 48h}]}\n  - {name: p, boards: [], tests: [{}]}\n",
			[]string{`lab.yaml:3: boards[0].name: board name "a b" is not usable in links`, `lab.yaml:7: boards[1].name: board has no name`, `lab.yaml:10: plans[0].bitstream: top.hex is not a bitstream file`,
				`lab.yaml:10: plans[0].boards[0].board: no board given`, `lab.yaml:10: plans[0].tests[0].tolerance: tolerance gives neither rel nor abs`, `lab.yaml:10: plans[0].tests[0].deadline: deadline 48h0m0s is longer than 24h0m0s`,
				`lab.yaml:11: plans[1].name: plan name "p" is used twice (first on line 10)`, `lab.yaml:11: plans[1].design: plan has no design`, `lab.yaml:11: plans[1].boards: plan has no boards`, `lab.yaml:11: plans[1].tests[0].test: no test named`}},
		{"line emulation on a real board and a console", head + "  - name: b\n    kind: tebf0808\n    emulated: {}\n    console: {port: emu, line_rate: true}\n    bus: {uart_bridge: {port: emu, request_latency: 2s}}\n    programmer: {type: emulated}\n  - name: c\n    kind: tebf0808\n    bus: {uart_bridge: {port: /dev/ttyUSB2, line_rate: true}}\n    programmer: {type: fpga_manager}\n",
			[]string{`lab.yaml:11: boards[1].console: line_rate and request_latency shape the emulated UART bridge only, not a console`,
				`lab.yaml:12: boards[1].bus.uart_bridge.request_latency: request latency 2s is outside 0..1s`,
				`lab.yaml:16: boards[2].bus.uart_bridge: line_rate and request_latency shape an emulated bridge line; a real USB-UART has its own (remove them, or make the board emulated (port: emu))`}},
		{"fault targets", head + "  - name: b\n    kind: tebf0808\n    bus: {mmio: {device: /dev/uio1, size: 4096}}\n    programmer: {type: fpga_manager}\nlinks:\n  - {a: \"a:sfp0\", b: \"b:sfp0\", asymmetry_ns: -10, latency_ns: 5}\nfaults:\n  - {name: link-down, link: \"a:sfp1\"}\n  - {name: link-down, link: \"a:sfp0\", board: b}\n  - {board: a}\n",
			[]string{`lab.yaml:13: links[0].asymmetry_ns: asymmetry -10 ns makes the B->A delay -5 ns`, `lab.yaml:15: faults[0].link: port a:sfp1 has no cable in links:`, `lab.yaml:16: faults[1].board: board b is not the board of link a:sfp0`, `lab.yaml:17: faults[2].name: fault has no name`}},
		{"link to itself", head + "links:\n  - {a: \"a:sfp0\", b: \"a:sfp0\"}\n  - {b: \"a:sfp1\"}\n",
			[]string{`lab.yaml:9: links[0]: both ends are a:sfp0`, `lab.yaml:10: links[1].a: no endpoint given`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := labconfig.Parse("lab.yaml", []byte(tc.file), known())
			if err == nil {
				t.Fatalf("no error for\n%s", tc.file)
			}
			var errs *labconfig.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error is %T, want *labconfig.Errors", err)
			}
			msg := err.Error()
			at := 0
			for _, w := range tc.want {
				i := strings.Index(msg[at:], w)
				if i < 0 {
					t.Fatalf("missing (in order) %q in\n%s", w, msg)
				}
				at += i
			}
			for _, e := range errs.List {
				if e.Pos.File != "lab.yaml" || e.Pos.Line < 1 {
					t.Errorf("error without position: %+v", e)
				}
			}
		})
	}
}

func TestEveryErrorReportedAtOnce(t *testing.T) {
	file := `lab: multi
boards:
  - name: a
    kind: tebf0808
    console: {port: /dev/ttyUSB0, baud: -5}
    bus: {mmio: {device: /dev/uio0, size: 4096}, uart_bridge: {port: /dev/ttyUSB1}}
    programmer: {type: jtag}
  - name: a
    kind: zcu104
    bus: {mmio: {device: /dev/uio1}}
    programmer: {type: xsdb}
    colour: red
links:
  - {a: "a:sfp0", b: "c:sfp0"}
plans:
  - name: p
    design: shoal
    boards: [{board: q}]
    tests: []
`
	_, err := labconfig.Parse("lab.yaml", []byte(file), known())
	var errs *labconfig.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("err = %v", err)
	}
	wantLines := []int{5, 6, 7, 8, 9, 10, 12, 14, 17, 18, 19}
	got := map[int]bool{}
	for _, e := range errs.List {
		got[e.Pos.Line] = true
	}
	for _, l := range wantLines {
		if !got[l] {
			t.Errorf("no error on line %d; got:\n%v", l, err)
		}
	}
	for i := 1; i < len(errs.List); i++ {
		if errs.List[i].Pos.Line < errs.List[i-1].Pos.Line {
			t.Errorf("errors not in line order:\n%v", err)
		}
	}
	t.Logf("reported:\n%v", err)
	if n := strings.Count(err.Error(), "\n") + 1; n != len(errs.List) {
		t.Errorf("%d lines for %d errors", n, len(errs.List))
	}
	var first *labconfig.Error
	if !errors.As(err, &first) || first.Pos.Line != 5 {
		t.Errorf("errors.As first = %+v", first)
	}
}

func TestMergeKeysAndAliases(t *testing.T) {
	file := `lab: merged
x-real: &real
  kind: tebf0808
  programmer: {type: xsdb}
boards:
  - <<: *real
    name: a
    bus: {mmio: {device: /dev/uio0, size: 0x1000}}
    programmer: {type: xsdb, usb_path: "1-1"}
  - <<: *real
    name: b
    bus: {mmio: {device: /dev/uio1, size: 0x1000}}
    programmer: {type: xsdb, usb_path: "1-2"}
`
	// x-real is not a lab key: strictness applies to the top level too.
	_, err := labconfig.Parse("lab.yaml", []byte(file), known())
	if err == nil || !strings.Contains(err.Error(), `lab.yaml:2: unknown key "x-real"`) {
		t.Fatalf("err = %v", err)
	}
	// Anchors defined inside a known key work.
	file = strings.Replace(file, "x-real: &real\n  kind: tebf0808\n  programmer: {type: xsdb}\nboards:\n  - <<: *real\n", "boards:\n  - &real\n    kind: tebf0808\n", 1)
	lab, err := labconfig.Parse("lab.yaml", []byte(file), known())
	if err != nil {
		t.Fatalf("%v\n%s", err, file)
	}
	if lab.Boards[1].Kind != "tebf0808" || lab.Boards[1].Name != "b" || lab.Boards[1].Programmer.USBPath != "1-2" {
		t.Errorf("merged board = %+v", lab.Boards[1])
	}
}

func TestAliasBombAndCycleRefused(t *testing.T) {
	bomb := "lab: t\na: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\nboards:\n  - tags: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
	_, err := labconfig.Parse("lab.yaml", []byte(bomb), known())
	if err == nil {
		t.Fatal("alias bomb accepted")
	}
	cycle := "lab: t\nboards:\n  - &x\n    name: a\n    <<: *x\n"
	if _, err := labconfig.Parse("lab.yaml", []byte(cycle), known()); err == nil {
		t.Fatal("alias cycle accepted")
	}
}

func TestParamAccessors(t *testing.T) {
	file := head + `plans:
  - name: p
    design: exanet
    boards: [{board: a}]
    params:
      n: 42
      hex: 0x40
      neg: -3
      list: [1, 2, 0x10]
      one: [7]
      f: 2.5e-3
      word: hello
      words: [a, b]
      d: 1500ms
      bare: 2
      yes: true
      bad: twelve
    tests: [{test: links}]
`
	lab, err := labconfig.Parse("lab.yaml", []byte(file), known())
	if err != nil {
		t.Fatal(err)
	}
	ps := lab.Plans[0].Params
	check := func(what string, got, want any, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		} else if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	n, err := ps.Int("n", 0)
	check("n", n, 42, err)
	n, err = ps.Int("hex", 0)
	check("hex", n, 64, err)
	n, err = ps.Int("neg", 0)
	check("neg", n, -3, err)
	n, err = ps.Int("one", 0)
	check("one", n, 7, err)
	n, err = ps.Int("absent", 9)
	check("absent", n, 9, err)
	l, err := ps.Ints("list", nil)
	check("list", l, []int{1, 2, 16}, err)
	l, err = ps.Ints("n", nil)
	check("ints of scalar", l, []int{42}, err)
	f, err := ps.Float("f", 0)
	check("f", f, 2.5e-3, err)
	fs, err := ps.Floats("list", nil)
	check("floats", fs, []float64{1, 2, 16}, err)
	s, err := ps.String("word", "")
	check("word", s, "hello", err)
	ss, err := ps.Strings("words", nil)
	check("words", ss, []string{"a", "b"}, err)
	d, err := ps.Duration("d", 0)
	check("d", d, 1500*time.Millisecond, err)
	b, err := ps.Bool("yes", false)
	check("yes", b, true, err)
	if !ps.Has("bad") || ps.Has("nope") {
		t.Error("Has")
	}
	// Errors name file:line and the parameter.
	bad := []struct {
		err  error
		want string
	}{
		{func() error { _, err := ps.Int("bad", 0); return err }(), `lab.yaml:24: bad: "twelve" is not an integer`},
		{func() error { _, err := ps.Int("list", 0); return err }(), `lab.yaml:16: list: want one integer, got a list of 3 values`},
		{func() error { _, err := ps.Duration("bare", 0); return err }(), `lab.yaml:22: bare: duration "2" has no unit`},
		{func() error { _, err := ps.Bool("word", false); return err }(), `lab.yaml:19: word: "hello" is not true or false`},
		{func() error { _, err := ps.Float("word", 0); return err }(), `lab.yaml:19: word: "hello" is not a finite number`},
		{func() error { _, err := ps.Ints("words", nil); return err }(), `lab.yaml:20: words: "a" is not an integer`},
		{ps.Check("n", "hex", "neg", "list", "one", "f", "word", "words", "d", "bare", "yes", "bda"), `lab.yaml:24: bad: unknown parameter "bad"`},
	}
	for _, c := range bad {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("got %v, want %q", c.err, c.want)
		}
	}
	if err := ps.Check("nn"); err == nil || !strings.Contains(err.Error(), "did you mean nn?") {
		t.Errorf("Check suggestion: %v", err)
	}
}

func TestHexAndLeadingZeros(t *testing.T) {
	file := "lab: t\nseed: 0010\nboards:\n  - name: a\n    kind: tebf0808\n    bus: {mmio: {device: /dev/mem, base: 0xA0000000, size: 0x0001_0000}}\n    programmer: {type: fpga_manager}\n"
	_, err := labconfig.Parse("lab.yaml", []byte(file), known())
	if err == nil || !strings.Contains(err.Error(), `lab.yaml:6: boards[0].bus.mmio.size: want a non-negative integer`) {
		t.Fatalf("underscore in hex: %v", err)
	}
	file = strings.Replace(file, "0x0001_0000", "0x10000", 1)
	lab, err := labconfig.Parse("lab.yaml", []byte(file), known())
	if err != nil {
		t.Fatal(err)
	}
	if lab.Seed != 10 {
		t.Errorf("seed 0010 = %d, want 10 (decimal, not octal)", lab.Seed)
	}
	m := lab.Boards[0].Bus.MMIO
	if m.Base != 0xA0000000 || m.Size != 0x10000 {
		t.Errorf("mmio = %+v", m)
	}
	g := lab.Boards[0].Programmer
	if g.Sysfs != "/sys" || g.FirmwareDir != "/lib/firmware" || g.Manager != "fpga0" {
		t.Errorf("fpga_manager defaults = %+v", g)
	}
}

func TestKnownEmptyListsAreNotChecked(t *testing.T) {
	file := head + "plans:\n  - name: p\n    design: anything\n    boards: [{board: a}]\n    tests: [{test: whatever}]\nfaults:\n  - {name: any-fault, board: a}\n"
	if _, err := labconfig.Parse("lab.yaml", []byte(file), labconfig.Known{}); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkParseDefault(b *testing.B) {
	k := known()
	src, _ := os.ReadFile(exanetLab)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := labconfig.Parse(exanetLab, src, k); err != nil {
			b.Fatal(err)
		}
	}
}

// quartus_pgm names a cable with its USB port ("DE5-Net [1-1.2]"): that
// binds it, and two boards cannot name the same port.
func TestQuartusCableNameBindsTheCable(t *testing.T) {
	lab := func(c0, c1 string) string {
		return "lab: q\nboards:\n" +
			"  - {name: d0, kind: de5net, bus: {mmio: {device: /dev/x, size: 0x1000}}, programmer: {type: quartus_pgm, cable: \"" + c0 + "\"}}\n" +
			"  - {name: d1, kind: de5net, bus: {mmio: {device: /dev/y, size: 0x1000}}, programmer: {type: quartus_pgm, cable: \"" + c1 + "\"}}\n"
	}
	k := labconfig.Known{Kinds: []string{"de5net"}}
	if _, err := labconfig.Parse("q.yaml", []byte(lab("DE5-Net [1-1.2]", "DE5-Net [1-1.4]")), k); err != nil {
		t.Errorf("two cables named with their ports: %v", err)
	}
	_, err := labconfig.Parse("q.yaml", []byte(lab("DE5-Net [1-1.2]", "DE5-Net [1-1.2]")), k)
	if err == nil || !strings.Contains(err.Error(), "USB path 1-1.2 is also bound to board d0") {
		t.Errorf("one port named twice: %v", err)
	}
	_, err = labconfig.Parse("q.yaml", []byte(lab("DE5-Net", "DE5-Net")), k)
	if err == nil || !strings.Contains(err.Error(), "each cable must be bound") {
		t.Errorf("cables without ports: %v", err)
	}
}
