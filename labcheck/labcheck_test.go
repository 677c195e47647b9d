package labcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/drivers/program"
	"github.com/labrunner/labrunner/labconfig"
)

// A real rack's lab, as a new user writes it: every board kind, every
// programmer, plans of every design the catalogue has files for.
const realLab = `
lab: real
boards:
  - {name: te-0, kind: tebf0808, bus: {uart_bridge: {port: /dev/ttyUSB1}}, programmer: {type: fpga_manager}}
  - {name: zcu-0, kind: zcu102, bus: {uart_bridge: {port: /dev/ttyUSB3}}, programmer: {type: xsdb, serial: "210308A12345"}}
  - {name: u96-0, kind: ultra96, bus: {uart_bridge: {port: /dev/ttyUSB5}}, programmer: {type: openfpgaloader, cable: digilent_hs2, serial: "210249A1"}}
  - {name: u96-1, kind: ultra96, bus: {uart_bridge: {port: /dev/ttyUSB7}}, programmer: {type: fpga_manager}}
  - {name: de5-0, kind: de5net, bus: {mmio: {device: "/sys/bus/pci/devices/0000:03:00.0/resource0", size: 0x200000}}, programmer: {type: quartus_pgm, cable: "DE5-Net [1-1.2]"}}
  - {name: de5-1, kind: de5net, bus: {mmio: {device: "/sys/bus/pci/devices/0000:04:00.0/resource0", size: 0x200000}}, programmer: {type: openfpgaloader, cable: usb-blasterII, usb_path: "1-1.4"}}
plans:
  - name: exa
    design: exanet
    boards: [{board: te-0}]
    tests:
      - test: bandwidth
        params: {path: link, payloads: [64], packets: 30}
  - name: tin
    design: tin
    boards: [{board: zcu-0}]
    tests: [{test: links}]
  - name: prr
    design: prr
    boards: [{board: u96-0}, {board: u96-1}]
    tests:
      - test: placement
        params: {batchs: 20}
  - name: shoal
    design: shoal
    boards: [{board: de5-0}, {board: de5-1}]
    tests: [{test: registers}]
faults:
  - {name: slow-clock, board: te-0, params: {pmm: -300}}
`

func known() labconfig.Known {
	cat := bitstreams.Default()
	progs := map[string][]string{}
	for _, k := range boards.KindNames() {
		kind, _ := boards.Lookup(k)
		progs[k] = kind.Programmers
	}
	return labconfig.Known{Kinds: boards.KindNames(), Designs: cat.Names(), Ports: boards.PortsByKind(), Programmers: progs}
}

// The parameters each test takes, as the tests declare them.
var testParams = map[string][]string{
	"exanet/bandwidth": {"path", "payloads", "packets"},
	"tin/links":        nil,
	"prr/placement":    {"batches", "check_every", "drain_every", "reset_every", "max_differing"},
	"shoal/registers":  nil,
}

func options() Options {
	return Options{
		Catalogue: bitstreams.Default(),
		CheckTest: func(design, test string, ps labconfig.Params) (bool, error) {
			allowed, ok := testParams[design+"/"+test]
			if !ok {
				return false, nil
			}
			return true, ps.Check(allowed...)
		},
		Faults: map[string]Fault{
			"credit-leak": {Scope: "link", Params: []string{"every"}},
			"slow-clock":  {Scope: "board", Params: []string{"ppm"}},
			"uart-drop":   {Scope: "board", Params: []string{"rate"}},
		},
	}
}

func parse(t *testing.T, name, src string) *labconfig.Lab {
	t.Helper()
	lab, err := labconfig.Parse(name, []byte(src), known())
	if err != nil {
		t.Fatalf("the lab file itself: %v", err)
	}
	return lab
}

// problems renders Check's errors one per line.
func problems(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	errs, ok := err.(*labconfig.Errors)
	if !ok {
		t.Fatalf("not *labconfig.Errors: %v", err)
	}
	var out []string
	for _, e := range errs.List {
		if e.Fix == "" || e.Pos.Line == 0 && !strings.HasPrefix(e.Pos.File, "--fault") {
			t.Errorf("problem without a fix or a line: %v", e.Error())
		}
		out = append(out, e.Error())
	}
	return out
}

func wantProblem(t *testing.T, got []string, subs ...string) {
	t.Helper()
	for _, g := range got {
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(g, s)
		}
		if ok {
			return
		}
	}
	t.Errorf("no problem says %q; got:\n%s", subs, strings.Join(got, "\n"))
}

func TestCheckRefusesWhatTheNightlyWouldRefuse(t *testing.T) {
	lab := parse(t, "real.yaml", realLab)
	got := problems(t, Check(lab, options()))
	// openFPGALoader 0.10.0 supports neither the Ultra96's xczu3eg nor the
	// DE5-Net's Stratix V.
	wantProblem(t, got, "real.yaml:", "boards[2].programmer.type", "openFPGALoader 0.10.0 does not support the ultra96's xczu3eg", "fpga_manager or xsdb")
	wantProblem(t, got, "boards[5].programmer.type", "does not support the de5net's 5sgxea7n2f45c2", "quartus_pgm")
	wantProblem(t, got, "plans[2].tests[0].params.batchs", `unknown parameter "batchs"`, "did you mean batches?")
	wantProblem(t, got, "faults[0].params.pmm", `unknown parameter "pmm"`, "did you mean ppm?")
	wantProblem(t, got, "faults[0].board", "te-0 is not emulated")
	if len(got) != 5 {
		t.Errorf("want exactly the 5 problems, got:\n%s", strings.Join(got, "\n"))
	}
	// Without the mistakes, every board has a file its programmer loads
	// (the DE5-Net's .sof for quartus_pgm, the .bit for fpga_manager and
	// xsdb) and the lab passes.
	fixed := strings.NewReplacer("type: openfpgaloader, cable: digilent_hs2, serial: \"210249A1\"", "type: fpga_manager",
		"type: openfpgaloader, cable: usb-blasterII, usb_path: \"1-1.4\"", "type: quartus_pgm, cable: \"DE5-Net [1-1.4]\"",
		"batchs", "batches", "  - {name: slow-clock, board: te-0, params: {pmm: -300}}\n", "").Replace(realLab)
	if err := Check(parse(t, "fixed.yaml", fixed), options()); err != nil {
		t.Errorf("the fixed lab: %v", err)
	}
}

// A newer openFPGALoader that lists the part (the installed one's list) is
// accepted.
func TestCheckUsesTheGivenOpenFPGALoaderList(t *testing.T) {
	o := options()
	lab := parse(t, "real.yaml", strings.Replace(realLab, "batchs", "batches", 1))

	o.OpenFPGALoader = nil
	base := len(problems(t, Check(lab, o)))
	o.OpenFPGALoader = newerList()
	if got := problems(t, Check(lab, o)); len(got) != base-2 {
		t.Errorf("with a list that has xczu3eg and the Stratix V, %d problems (want %d):\n%s", len(got), base-2, strings.Join(got, "\n"))
	}
}

func TestCheckPlanBitstreams(t *testing.T) {
	dir := t.TempDir()
	cat := bitstreams.Default()
	_, _, data, err := cat.FileFor("shoal", "5sgxea7n2f45c2", "rbf")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "shoal.rbf"), data, 0o644)
	_, _, sdata, _ := cat.FileFor("shoal", "5sgxea7n2f45c2", "sof")
	os.WriteFile(filepath.Join(dir, "shoal.sof"), sdata, 0o644)
	_, _, xdata, _ := cat.FileFor("exanet", "xczu9eg-ffvb1156-2-e")
	os.WriteFile(filepath.Join(dir, "exanet-zcu102.bit"), xdata, 0o644)
	lab := func(plans string) *labconfig.Lab {
		return parse(t, filepath.Join(dir, "lab.yaml"), `
lab: files
boards:
  - {name: de5-0, kind: de5net, bus: {mmio: {device: /dev/x, size: 0x1000}}, programmer: {type: quartus_pgm, cable: "DE5-Net [1-1.2]"}}
  - {name: te-0, kind: tebf0808, bus: {mmio: {device: /dev/y, size: 0x1000}}, programmer: {type: fpga_manager}}
plans:
`+plans)
	}
	for _, tc := range []struct {
		name, plans string
		says        []string
	}{
		{"missing file", "  - {name: p, design: shoal, bitstream: nosuch.sof, boards: [{board: de5-0}], tests: [{test: registers}]}\n",
			[]string{"plans[0].bitstream", "nosuch.sof cannot be read"}},
		{"rbf for quartus_pgm", "  - {name: p, design: shoal, bitstream: shoal.rbf, boards: [{board: de5-0}], tests: [{test: registers}]}\n",
			[]string{"quartus_pgm, which loads .sof, not .rbf"}},
		{"wrong part", "  - {name: p, design: exanet, bitstream: exanet-zcu102.bit, boards: [{board: te-0}], tests: [{test: registers}]}\n",
			[]string{"board te-0", "xczu9eg-ffvb1156", "xczu9eg-ffvc900"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantProblem(t, problems(t, Check(lab(tc.plans), Options{Catalogue: cat})), tc.says...)
		})
	}
	ok := "  - {name: p, design: shoal, bitstream: shoal.sof, boards: [{board: de5-0}], tests: [{test: registers}]}\n"
	if err := Check(lab(ok), Options{Catalogue: cat}); err != nil {
		t.Errorf("the design's .sof for quartus_pgm: %v", err)
	}
}

func TestCheckFlagFaults(t *testing.T) {
	lab := parse(t, "lab.yaml", `
lab: emu
boards:
  - {name: a0, kind: tebf0808, emulated: {}, bus: {emulated: {}}, programmer: {type: emulated}}
  - {name: a1, kind: tebf0808, emulated: {}, bus: {emulated: {}}, programmer: {type: emulated}}
  - {name: r0, kind: tebf0808, bus: {mmio: {device: /dev/y, size: 0x1000}}, programmer: {type: fpga_manager}}
links:
  - {a: "a0:sfp0", b: "a1:sfp0"}
plans:
  - {name: p, design: exanet, boards: [{board: a0}, {board: a1}], tests: [{test: links}]}
`)
	o := options()
	for _, s := range []string{"credit-leak@a0:sfp0,evry=3", "slow-clok@a0", "slow-clock", "slow-clock@a9", "uart-drop@r0", "credit-leak@a0:sfp0,every=3", "slow-clock@a1,ppm=-300"} {
		f, err := labconfig.ParseFault(s)
		if err != nil {
			t.Fatal(err)
		}
		o.FlagFaults = append(o.FlagFaults, f)
	}
	got := problems(t, Check(lab, o))
	wantProblem(t, got, "--fault credit-leak@a0:sfp0,evry=3: params.evry", "did you mean every?")
	wantProblem(t, got, "--fault slow-clok@a0: name", "did you mean slow-clock?")
	wantProblem(t, got, "--fault slow-clock: board", "a board's fault")
	wantProblem(t, got, "--fault slow-clock@a9: board", `no board "a9"`)
	wantProblem(t, got, "--fault uart-drop@r0: board", "not emulated")
	if len(got) != 5 {
		t.Errorf("want the 5 problems, got:\n%s", strings.Join(got, "\n"))
	}
}

// newerList stands for an openFPGALoader release whose --list-fpga has the
// xczu3eg and a Stratix V (as its own rows would read).
func newerList() *program.PartList {
	l := program.KnownOpenFPGALoader()
	l.Version = "1.0.0"
	l.FPGAs = append(l.FPGAs,
		program.FPGA{IDCode: 0x04710093, Manufacturer: "xilinx", Family: "zynqmp", Model: "xczu3eg"},
		program.FPGA{IDCode: 0x029070dd, Manufacturer: "altera", Family: "stratix V", Model: "5SGXEA7"})
	return l
}

// A board whose design is fixed (programmer: none, the Verilator
// co-simulation) is never programmed: no bitstream is looked for.
func TestCheckSkipsFixedDesigns(t *testing.T) {
	lab := parse(t, "fixed.yaml", `
lab: fixed
boards:
  - {name: sim-0, kind: verilator, bus: {uart_bridge: {port: /dev/pts/9}}, programmer: {type: none}}
plans:
  - {name: p, design: exanet, boards: [{board: sim-0}], tests: [{test: registers}]}
`)
	if err := Check(lab, options()); err != nil {
		t.Errorf("a fixed design: %v", err)
	}
}

// A plan's own params: and its boards' are checked as CheckPlan decodes
// them: each problem is reported under the plan's field, at its line (the
// plan's when the decode has none), for the plans selected only.
func TestCheckPlanParams(t *testing.T) {
	lab := parse(t, "real.yaml", strings.Replace(realLab, "batchs", "batches", 1))
	o := options()
	o.CheckPlan = func(pl *labconfig.Plan) error {
		if pl.Design != "exanet" {
			return nil
		}
		return &labconfig.Errors{List: []labconfig.Error{
			{Pos: labconfig.Pos{File: "real.yaml", Line: 3}, Field: "params.dor_ordr", Msg: `plan exa (design exanet): unknown parameter "dor_ordr"`, Fix: "did you mean dor_order?"},
			{Field: "boards[0].params.coord", Msg: "board te-0: missing parameter coord", Fix: "write coord: [0, ...]"},
		}}
	}
	o.Faults = nil
	got := problems(t, Check(lab, o))
	wantProblem(t, got, "real.yaml:3: plans[0].params.dor_ordr: plan exa (design exanet): unknown parameter", "did you mean dor_order?")
	wantProblem(t, got, "plans[0].boards[0].params.coord: board te-0: missing parameter coord (write coord: [0, ...])")
	exa := lab.Plans[0].Pos.String()
	if !strings.HasPrefix(got[len(got)-1], exa+": plans[0].boards[0]") && !strings.HasPrefix(got[0], exa+": plans[0].boards[0]") {
		t.Errorf("the missing coordinate is not at the plan's line %s:\n%s", exa, strings.Join(got, "\n"))
	}
	o.Plans = []string{"prr"}
	if err := Check(lab, o); err != nil && strings.Contains(err.Error(), "plans[0]") {
		t.Errorf("only prr selected: %v", err)
	}
}
