package main

import (
	"fmt"
	"log/slog"
	"os"
	"sort"

	"github.com/urfave/cli/v2"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/boards/emu"
	_ "github.com/labrunner/labrunner/boards/emu/designs" // every emulated design
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
