package labrun

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/drivers/program"
	"github.com/labrunner/labrunner/labcheck"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
)

// known lists what a lab file may name: board kinds, designs, tests, faults.
// The tests and the emulated designs are those registered in this binary
// (the CLI imports selftest/all and boards/emu/designs).
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

// LoadLab loads a lab file, or the embedded default lab when path is empty.
// A bad lab file is an *Error with ExitConfig listing every problem with
// file:line.
func LoadLab(path string, cat *bitstreams.Catalogue) (*labconfig.Lab, error) {
	k := known(cat)
	var lab *labconfig.Lab
	var err error
	if path != "" {
		lab, err = labconfig.Load(path, k)
	} else {
		lab, err = labconfig.Default(k)
	}
	if err != nil {
		return nil, setupError(err)
	}
	return lab, nil
}

// loadLabFor loads the lab a resumed run used (its lab file, or the
// embedded default), else the one path names.
func loadLabFor(path string, cat *bitstreams.Catalogue, resumed *results.Run) (*labconfig.Lab, error) {
	if resumed == nil {
		return LoadLab(path, cat)
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
		return nil, setupError(fmt.Errorf("the resumed run's lab: %w", err))
	}
	if lab.Name != resumed.Lab {
		return nil, setupError(fmt.Errorf("the resumed run used lab %q, %s is lab %q", resumed.Lab, lab.Pos.File, lab.Name))
	}
	return lab, nil
}

// StartRack starts the emulated rack when the lab has emulated boards, with
// the given faults (NAME[@BOARD[:PORT]][,k=v], on top of the lab file's)
// and seed (0: the lab's); it returns nil (and no error) when the lab has
// no emulated board.
func StartRack(lab *labconfig.Lab, cat *bitstreams.Catalogue, log *slog.Logger, faultSpecs []string, seed int64) (*emu.Rack, error) {
	var faults []labconfig.Fault
	for _, s := range faultSpecs {
		f, err := labconfig.ParseFault(s)
		if err != nil {
			return nil, setupError(err)
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
			return nil, setupError(fmt.Errorf("--fault needs emulated boards; lab %s has none", lab.Name))
		}
		return nil, nil
	}
	r, err := emu.Start(lab, emu.Options{Seed: seed, Faults: faults, Catalogue: cat, Log: log.With("component", "emu")})
	if err != nil {
		return nil, setupError(fmt.Errorf("starting the emulated rack: %w", err))
	}
	return r, nil
}

// Emulator returns rack as a boards.Emulator, or nil without a rack (a nil
// *emu.Rack must not become a non-nil interface).
func Emulator(r *emu.Rack) boards.Emulator {
	if r == nil {
		return nil
	}
	return r
}

// CheckLab checks the lab against everything a nightly needs before it
// touches a board (labcheck): bitstreams, programmers, the plans' and
// their boards' parameters, test and fault parameters, the faults given
// on the command line, for the named plans (all when none). Problems are an *Error with ExitConfig listing each with
// file:line and the fix. What openFPGALoader supports comes from the
// installed tool when a board uses it and it answers, else from the list
// labrunner embeds (a note on notes says which).
func CheckLab(ctx context.Context, lab *labconfig.Lab, cat *bitstreams.Catalogue, flagFaults []string, plans []string, notes io.Writer) error {
	var fs []labconfig.Fault
	for _, s := range flagFaults {
		f, err := labconfig.ParseFault(s)
		if err != nil {
			return setupError(err)
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
		CheckPlan: func(pl *labconfig.Plan) error {
			var manifest map[string]string
			if m, err := cat.Design(pl.Design); err == nil {
				manifest = m.Params
			}
			return selftest.CheckPlanOnLab(lab, pl, manifest)
		},
		CheckTest: func(design, name string, ps labconfig.Params) (bool, error) {
			t, ok := selftest.Lookup(design, name)
			if !ok {
				return false, nil
			}
			return true, t.CheckParams(ps)
		},
		OpenFPGALoader: openFPGALoaderParts(ctx, lab, notes),
	}
	if err := labcheck.Check(lab, o); err != nil {
		return setupError(err)
	}
	return nil
}

// openFPGALoaderParts asks the installed openFPGALoader (the first board's
// tool:, else PATH's) what it supports; nil (the embedded list) when no
// board uses it or it does not answer.
func openFPGALoaderParts(ctx context.Context, lab *labconfig.Lab, notes io.Writer) *program.PartList {
	for _, b := range lab.Boards {
		if b.Programmer.Type != "openfpgaloader" {
			continue
		}
		l, err := program.ListOpenFPGALoader(ctx, b.Programmer.Tool)
		if err != nil {
			fmt.Fprintf(orDiscard(notes), "note: what openFPGALoader supports is taken from its %s release (the installed one did not answer: %v)\n", program.OpenFPGALoaderListVersion, oneLine(err.Error(), 200))
			return nil
		}
		return l
	}
	return nil
}

func isEmbedded(lab *labconfig.Lab) bool {
	_, err := os.Stat(lab.Pos.File)
	return err != nil
}

// ResultsRoot is where run directories go: out when given, else the lab
// file's results.root (relative to the lab file), else ./runs.
func ResultsRoot(out string, lab *labconfig.Lab) string {
	if out != "" {
		return out
	}
	root := lab.Results.Root
	if root != "" && !filepath.IsAbs(root) && lab.Pos.File != "" && !isEmbedded(lab) {
		root = filepath.Join(filepath.Dir(lab.Pos.File), root)
	}
	if root == "" {
		return "runs"
	}
	return root
}

// KnownPlans refuses plan names the lab does not define before anything
// runs: a typo would otherwise give an empty run that looks like a setup
// error.
func KnownPlans(lab *labconfig.Lab, only []string) error {
	have := PlanNames(lab, nil)
	for _, p := range only {
		if !slices.Contains(have, p) {
			return setupError(fmt.Errorf("%s: no plan %q; the lab's plans are %s", lab.Pos.File, p, strings.Join(have, ", ")))
		}
	}
	return nil
}

// PlanNames is only when given, else every plan of the lab.
func PlanNames(lab *labconfig.Lab, only []string) []string {
	if len(only) > 0 {
		return only
	}
	var out []string
	for _, p := range lab.Plans {
		out = append(out, p.Name)
	}
	return out
}

// versions is run.json's record of what ran: labrunner's version, Go's and
// the VCS revision the binary was built from.
func versions(labrunner string) map[string]string {
	v := map[string]string{"labrunner": labrunner, "go": runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v["revision"] = s.Value
			}
		}
	}
	return v
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return h
}
