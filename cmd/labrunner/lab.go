package main

import (
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/boards/emu"
	_ "github.com/labrunner/labrunner/boards/emu/designs" // every emulated design
	"github.com/labrunner/labrunner/drivers/program"
	"github.com/labrunner/labrunner/labcheck"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	_ "github.com/labrunner/labrunner/selftest/all" // every design's tests
)

func labFlag() cli.Flag {
	return &cli.StringFlag{Name: "lab", Usage: "lab file (YAML); the embedded emulated rack when not given", EnvVars: []string{"LABRUNNER_LAB"}}
}

func faultFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "fault", Usage: "inject an emulator fault; `SPEC` is NAME[@BOARD[:PORT]][,KEY=VALUE...] (labrunner faults lists them); repeatable"}
}

func seedFlag() cli.Flag {
	return &cli.Int64Flag{Name: "seed", Usage: "emulator seed", DefaultText: "the lab file's"}
}

// known lists what a lab file may name: board kinds, designs, tests, faults.
func known(cat *bitstreams.Catalogue) labconfig.Known {
	var designs []string
	for _, m := range cat.Designs() {
		designs = append(designs, m.Name)
	}
	sort.Strings(designs)
	var faults []string
	for _, f := range emu.Faults() {
		faults = append(faults, f.Name)
	}
	return labconfig.Known{
		Kinds:   boards.KindNames(),
		Designs: designs,
		Tests:   selftest.TestNames(designs),
		Faults:  faults,
		Ports:   boards.PortsByKind(),
	}
}

// loadLab loads --lab, or the embedded default lab. A bad lab file is a
// configuration error (exit 2) listing every problem with file:line.
func loadLab(c *cli.Context, cat *bitstreams.Catalogue) (*labconfig.Lab, error) {
	k := known(cat)
	var lab *labconfig.Lab
	var err error
	if p := c.String("lab"); p != "" {
		lab, err = labconfig.Load(p, k)
	} else {
		lab, err = labconfig.Default(k)
	}
	if err != nil {
		return nil, withCode(selftest.ExitConfig, err)
	}
	return lab, nil
}

// loadLabFor loads the lab a resumed run used (its lab file, or the
// embedded default), else the one --lab names.
func loadLabFor(c *cli.Context, cat *bitstreams.Catalogue, resumed *results.Run) (*labconfig.Lab, error) {
	if resumed == nil {
		return loadLab(c, cat)
	}
	k := known(cat)
	var lab *labconfig.Lab
	var err error
	if _, serr := os.Stat(resumed.LabFile); serr == nil {
		lab, err = labconfig.Load(resumed.LabFile, k)
	} else {
		lab, err = labconfig.Default(k)
	}
	if err != nil {
		return nil, withCode(selftest.ExitConfig, fmt.Errorf("the resumed run's lab: %w", err))
	}
	if lab.Name != resumed.Lab {
		return nil, exitf(selftest.ExitConfig, "the resumed run used lab %q, %s is lab %q", resumed.Lab, lab.Pos.File, lab.Name)
	}
	return lab, nil
}

// faultsFromFlags parses --fault flags.
func faultsFromFlags(c *cli.Context) ([]labconfig.Fault, error) {
	var out []labconfig.Fault
	for _, s := range c.StringSlice("fault") {
		f, err := labconfig.ParseFault(s)
		if err != nil {
			return nil, withCode(selftest.ExitConfig, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// startRack starts the emulated rack when the lab has emulated boards; it
// returns nil (and no error) when it has none.
func startRack(c *cli.Context, lab *labconfig.Lab, cat *bitstreams.Catalogue, log *slog.Logger) (*emu.Rack, error) {
	var seed int64
	if c.IsSet("seed") {
		seed = c.Int64("seed")
	}
	return startRackWith(c, lab, cat, log, c.StringSlice("fault"), seed)
}

// startRackWith starts the rack with the given fault flags and seed (0: the
// lab's): a resumed run reuses those of the run it goes on with.
func startRackWith(c *cli.Context, lab *labconfig.Lab, cat *bitstreams.Catalogue, log *slog.Logger, faultFlags []string, seed int64) (*emu.Rack, error) {
	var faults []labconfig.Fault
	for _, s := range faultFlags {
		f, err := labconfig.ParseFault(s)
		if err != nil {
			return nil, withCode(selftest.ExitConfig, err)
		}
		faults = append(faults, f)
	}
	hasEmu := false
	for _, b := range lab.Boards {
		if b.Emulated != nil {
			hasEmu = true
		}
	}
	if !hasEmu {
		if len(faults) > 0 {
			return nil, exitf(selftest.ExitConfig, "--fault needs emulated boards; lab %s has none", lab.Name)
		}
		return nil, nil
	}
	r, err := emu.Start(lab, emu.Options{Seed: seed, Faults: faults, Catalogue: cat, Log: log.With("component", "emu")})
	if err != nil {
		return nil, withCode(selftest.ExitConfig, fmt.Errorf("starting the emulated rack: %w", err))
	}
	return r, nil
}

// emulator returns rack as a boards.Emulator, or nil without a rack (a nil
// *emu.Rack must not become a non-nil interface).
func emulator(r *emu.Rack) boards.Emulator {
	if r == nil {
		return nil
	}
	return r
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return h
}

// writeServedLab writes a lab file for a rack `sim serve` keeps up: each
// emulated board becomes a board reached through the rack's pseudo-terminals
// (console and UART bridge), so that regs, console and program act on the
// running rack instead of starting a throw-away one. Its plans name the same
// designs and boards (for --design defaults) with the generic registers
// test; its programmer is the fpga_manager the emulated boards do not have,
// so `program` on it fails cleanly: sim serve has programmed them.
func writeServedLab(path string, lab *labconfig.Lab, rack *emu.Rack) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# The boards of lab %s as `labrunner sim serve` serves them, reached through its pseudo-terminals.\n", lab.Name)
	b.WriteString("# Valid while that sim serve runs; written by labrunner sim serve --lab-out.\n")
	fmt.Fprintf(&b, "lab: %s-served\nseed: %d\n", lab.Name, lab.Seed)
	d := lab.Deadlines
	fmt.Fprintf(&b, "deadlines: {register: %s, program: %s, console: %s, test: %s, power: %s}\nboards:\n", d.Register, d.Program, d.Console, d.Test, d.Power)
	served := map[string]bool{}
	for _, eb := range rack.Boards() {
		cp, cerr := rack.ConsolePath(eb.Name())
		bp, berr := rack.BridgePath(eb.Name())
		if cerr != nil || berr != nil || cp == "" || bp == "" {
			continue
		}
		served[eb.Name()] = true
		k := eb.Kind()
		fmt.Fprintf(&b, "  - name: %s\n    kind: %s\n    dcn: true\n", eb.Name(), k.Name)
		fmt.Fprintf(&b, "    console: {port: %s, baud: %d}\n", cp, k.ConsoleBaud)
		fmt.Fprintf(&b, "    bus: {uart_bridge: {port: %s, baud: %d}}\n", bp, k.BridgeBaud)
		b.WriteString("    programmer: {type: fpga_manager, sysfs: /nonexistent/served-by-sim, firmware_dir: /nonexistent/served-by-sim}\n")
	}
	if len(served) == 0 {
		return fmt.Errorf("--lab-out: lab %s has no board served on pseudo-terminals", lab.Name)
	}
	var plans strings.Builder
	for _, p := range lab.Plans {
		var bs []string
		for _, pb := range p.Boards {
			if served[pb.Board] {
				bs = append(bs, "{board: "+pb.Board+"}")
			}
		}
		if len(bs) == 0 {
			continue
		}
		fmt.Fprintf(&plans, "  - name: %s\n    design: %s\n    boards: [%s]\n    tests: [{test: registers}]\n", p.Name, p.Design, strings.Join(bs, ", "))
	}
	if plans.Len() > 0 {
		b.WriteString("plans:\n" + plans.String())
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// checkLab checks the lab against everything the nightly needs before it
// touches a board (labcheck): bitstreams, programmers, test and fault
// parameters, the --fault flags given. Problems are a configuration error
// (exit 2) listing each with file:line and the fix. What openFPGALoader
// supports comes from the installed tool when a board uses it and it
// answers, else from the list labrunner embeds (a note says which).
func checkLab(c *cli.Context, lab *labconfig.Lab, cat *bitstreams.Catalogue, flagFaults []string, plans []string) error {
	var fs []labconfig.Fault
	for _, s := range flagFaults {
		f, err := labconfig.ParseFault(s)
		if err != nil {
			return withCode(selftest.ExitConfig, err)
		}
		fs = append(fs, f)
	}
	faults := map[string]labcheck.Fault{}
	for _, f := range emu.Faults() {
		var ps []string
		for k := range f.Params {
			ps = append(ps, k)
		}
		sort.Strings(ps)
		faults[f.Name] = labcheck.Fault{Scope: f.Scope, Params: ps}
	}
	o := labcheck.Options{
		Catalogue: cat, Faults: faults, FlagFaults: fs, Plans: plans,
		CheckTest: func(design, name string, ps labconfig.Params) (bool, error) {
			t, ok := selftest.Lookup(design, name)
			if !ok {
				return false, nil
			}
			return true, t.CheckParams(ps)
		},
		OpenFPGALoader: openFPGALoaderParts(c, lab),
	}
	if err := labcheck.Check(lab, o); err != nil {
		return withCode(selftest.ExitConfig, err)
	}
	return nil
}

// openFPGALoaderParts asks the installed openFPGALoader (the first board's
// tool:, else PATH's) what it supports; nil (the embedded list) when no
// board uses it or it does not answer.
func openFPGALoaderParts(c *cli.Context, lab *labconfig.Lab) *program.PartList {
	for _, b := range lab.Boards {
		if b.Programmer.Type != "openfpgaloader" {
			continue
		}
		l, err := program.ListOpenFPGALoader(c.Context, b.Programmer.Tool)
		if err != nil {
			fmt.Fprintf(os.Stderr, "note: what openFPGALoader supports is taken from its %s release (the installed one did not answer: %v)\n", program.OpenFPGALoaderListVersion, oneLine(err.Error(), 200))
			return nil
		}
		return l
	}
	return nil
}
