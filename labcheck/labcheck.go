// Package labcheck checks a loaded lab file against everything the nightly
// will need, before anything touches a board: for every board of every plan,
// the bitstream it would be programmed with (the plan's own file or the
// catalogue's) exists, parses, was built for the board's part and is in a
// format the board's programmer loads, and the programmer supports the
// part; the plan's own parameters and each of its boards' are ones the
// design takes, of their types and limits, with every required one given;
// every test's parameters are ones the test takes; every fault, from
// the lab file or from --fault, is a known fault aimed at the kind of
// target it needs, with parameters it takes. labconfig has already checked
// the file's own consistency; this is what it cannot know on its own.
package labcheck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/drivers/program"
	"github.com/labrunner/labrunner/internal/strictyaml"
	"github.com/labrunner/labrunner/labconfig"
)

// Fault is what a fault needs: its scope ("board", "link" or "rack") and
// the parameters it takes.
type Fault struct {
	Scope  string
	Params []string
}

// Options says what the lab is checked against.
type Options struct {
	Catalogue *bitstreams.Catalogue
	// CheckTest decodes the parameters of a plan's test entry into the
	// design's test's parameter struct (selftest.Test.CheckParams): unknown
	// keys, values of the wrong type or outside their limits; known is
	// false when the design has no such test (labconfig reports that).
	CheckTest func(design, test string, ps labconfig.Params) (known bool, err error)
	// CheckPlan decodes a plan's params: and each of its boards' params:
	// into the design's parameter structs (selftest.DecodePlan): unknown
	// keys, values of the wrong type or outside their limits, a required
	// parameter left out, boards that do not fit the plan (a coordinate
	// outside the lattice). Its *labconfig.Errors name fields relative to
	// the plan ("params.lattice", "boards[1].params.coord").
	CheckPlan func(pl *labconfig.Plan) error
	// Faults are the faults the emulated rack can inject, by name.
	Faults map[string]Fault
	// FlagFaults are faults given on the command line (--fault).
	FlagFaults []labconfig.Fault
	// Plans restricts the plan checks to these plans (all when empty).
	Plans []string
	// OpenFPGALoader is what openFPGALoader supports: the installed tool's
	// own list when there is one (program.ListOpenFPGALoader), else the
	// embedded list (program.KnownOpenFPGALoader, the default).
	OpenFPGALoader *program.PartList
}

// Check returns nil, or *labconfig.Errors listing every problem with
// file:line, the field and the fix.
func Check(lab *labconfig.Lab, o Options) error {
	if o.OpenFPGALoader == nil {
		o.OpenFPGALoader = program.KnownOpenFPGALoader()
	}
	c := &checker{lab: lab, o: o, images: map[string]string{}}
	c.plans()
	c.faults()
	if len(c.errs) == 0 {
		return nil
	}
	sort.SliceStable(c.errs, func(i, j int) bool {
		if c.errs[i].Pos.File != c.errs[j].Pos.File {
			return c.errs[i].Pos.File < c.errs[j].Pos.File
		}
		return c.errs[i].Pos.Line < c.errs[j].Pos.Line
	})
	return &labconfig.Errors{List: c.errs}
}

type checker struct {
	lab    *labconfig.Lab
	o      Options
	errs   []labconfig.Error
	images map[string]string // design, part, formats -> problem ("" when fine)
	boards map[string]bool   // programmers checked
}

func (c *checker) add(pos labconfig.Pos, field, msg, fix string) {
	c.errs = append(c.errs, labconfig.Error{Pos: pos, Field: field, Msg: msg, Fix: fix})
}

func (c *checker) selected(plan string) bool {
	if len(c.o.Plans) == 0 {
		return true
	}
	for _, p := range c.o.Plans {
		if p == plan {
			return true
		}
	}
	return false
}

func (c *checker) plans() {
	c.boards = map[string]bool{}
	for i := range c.lab.Plans {
		pl := &c.lab.Plans[i]
		if !c.selected(pl.Name) {
			continue
		}
		p := fmt.Sprintf("plans[%d]", i)
		if c.o.Catalogue != nil {
			c.bitstreams(p, pl)
		}
		if c.o.CheckPlan != nil {
			c.planParams(p, pl)
		}
		if c.o.CheckTest != nil {
			c.tests(p, pl)
		}
	}
}

// boardIndex finds a board of the lab and its index.
func (c *checker) boardIndex(name string) (int, *labconfig.Board) {
	for i := range c.lab.Boards {
		if c.lab.Boards[i].Name == name {
			return i, &c.lab.Boards[i]
		}
	}
	return -1, nil
}

// bitstreams checks, for each board of a plan, the file it would be
// programmed with and that its programmer can load it into that part.
func (c *checker) bitstreams(p string, pl *labconfig.Plan) {
	m, err := c.o.Catalogue.Design(pl.Design)
	if err != nil || m.Builtin {
		return // an unknown design is labconfig's; a built-in one is never programmed
	}
	for j, pb := range pl.Boards {
		bi, b := c.boardIndex(pb.Board)
		if b == nil || b.Programmer.Type == "none" {
			continue // a board whose design is fixed is never programmed
		}
		kind, err := boards.Lookup(b.Kind)
		if err != nil {
			continue
		}
		if !c.boards[b.Name] {
			c.boards[b.Name] = true
			c.programmer(bi, b, kind)
		}
		typ := b.Programmer.Type
		formats := program.Formats(typ, kind.Vendor)
		at := pb.Pos
		if at.Line == 0 {
			at = pl.Pos
		}
		if pl.Bitstream != "" {
			c.planFile(p, pl, m, b, kind, formats)
			continue
		}
		key := m.Name + "\x00" + kind.Part + "\x00" + strings.Join(formats, ",")
		prob, seen := c.images[key]
		if !seen {
			prob = c.catalogueFile(m, kind, typ, formats)
			c.images[key] = prob
		}
		if prob != "" {
			c.add(at, fmt.Sprintf("%s.boards[%d]", p, j), fmt.Sprintf("board %s (%s, %s): %s", b.Name, kind.Name, kind.Part, prob),
				"build the design in a format the programmer loads and list it in the catalogue, or program the board with another programmer")
		}
	}
}

// catalogueFile checks the catalogue's file for a part and programmer, and
// says what is wrong ("" when nothing).
func (c *checker) catalogueFile(m *bitstreams.Manifest, kind boards.Kind, typ string, formats []string) string {
	_, f, data, err := c.o.Catalogue.FileFor(m.Name, kind.Part, formats...)
	if err != nil {
		return err.Error()
	}
	if _, err := c.o.Catalogue.Check(m, c.o.Catalogue.FilePath(m, f), data, kind.Part); err != nil {
		return err.Error()
	}
	return ""
}

// planFile checks a plan's own bitstream for one board, as the runner
// would read it (a path relative to the lab file).
func (c *checker) planFile(p string, pl *labconfig.Plan, m *bitstreams.Manifest, b *labconfig.Board, kind boards.Kind, formats []string) {
	path := pl.Bitstream
	if !filepath.IsAbs(path) && pl.Pos.File != "" && pl.Pos.File != labconfig.DefaultFile {
		path = filepath.Join(filepath.Dir(pl.Pos.File), path)
	}
	field := p + ".bitstream"
	key := "file\x00" + path + "\x00" + kind.Part + "\x00" + strings.Join(formats, ",")
	if _, seen := c.images[key]; seen {
		return
	}
	c.images[key] = ""
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if len(formats) > 0 && !contains(formats, ext) {
		c.add(pl.Pos, field, fmt.Sprintf("board %s is programmed with %s, which loads .%s, not .%s", b.Name, b.Programmer.Type, strings.Join(formats, " or ."), ext),
			fmt.Sprintf("give a .%s of %s, or leave bitstream: out to use the catalogue's", formats[0], m.Name))
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		c.add(pl.Pos, field, fmt.Sprintf("bitstream %s cannot be read: %v", path, err), "fix the path (relative to the lab file) or copy the file there")
		return
	}
	if _, err := c.o.Catalogue.Check(m, path, data, kind.Part); err != nil {
		c.add(pl.Pos, field, fmt.Sprintf("board %s (%s): %v", b.Name, kind.Part, err), "give the design's file built for this board's part")
	}
}

// programmer checks that the board's programmer supports its part.
func (c *checker) programmer(i int, b *labconfig.Board, kind boards.Kind) {
	at := b.Programmer.Pos
	if at.Line == 0 {
		at = b.Pos
	}
	field := fmt.Sprintf("boards[%d].programmer.type", i)
	others := func() string {
		var alt []string
		for _, t := range kind.Programmers {
			if t != b.Programmer.Type && t != "emulated" && (t != "openfpgaloader" || supports(c.o.OpenFPGALoader, kind.Part)) {
				alt = append(alt, t)
			}
		}
		if len(alt) == 0 {
			return "no other programmer fits a " + kind.Name
		}
		return "program the " + kind.Name + " with " + strings.Join(alt, " or ")
	}
	switch b.Programmer.Type {
	case "openfpgaloader":
		if _, ok := c.o.OpenFPGALoader.Supports(kind.Part); !ok {
			c.add(at, field, fmt.Sprintf("openFPGALoader %s does not support the %s's %s: its own list (openFPGALoader --list-fpga) has no such device", c.o.OpenFPGALoader.Version, kind.Name, kind.Part),
				others()+", or install an openFPGALoader that lists it (labrunner doctor shows what the installed one supports)")
		}
	case "fpga_manager":
		if !strings.HasPrefix(strings.ToLower(kind.Part), "xczu") {
			c.add(at, field, fmt.Sprintf("fpga_manager programs the PL of a Zynq UltraScale+ MPSoC from its own Linux; the %s's %s is not one", kind.Name, kind.Part), others())
		}
	}
}

// planParams checks the plan's and its boards' parameters.
func (c *checker) planParams(p string, pl *labconfig.Plan) {
	err := c.o.CheckPlan(pl)
	if err == nil {
		return
	}
	var errs *labconfig.Errors
	if !errors.As(err, &errs) {
		c.add(pl.Pos, p+".params", fmt.Sprintf("plan %s: %v", pl.Name, err), "")
		return
	}
	for _, e := range errs.List {
		if e.Pos.Line == 0 && e.Pos.File == "" {
			e.Pos = pl.Pos
		}
		e.Field = p + "." + e.Field
		c.errs = append(c.errs, e)
	}
}

func (c *checker) tests(p string, pl *labconfig.Plan) {
	for j := range pl.Tests {
		t := &pl.Tests[j]
		known, err := c.o.CheckTest(pl.Design, t.Name, t.Params)
		if !known || err == nil {
			continue
		}
		tp := fmt.Sprintf("%s.tests[%d].params", p, j)
		if errs, ok := err.(*labconfig.Errors); ok {
			for _, e := range errs.List {
				if e.Pos.Line == 0 {
					e.Pos = t.Pos
				}
				e.Field = tp + "." + e.Field
				e.Msg = "test " + t.Name + ": " + e.Msg
				c.errs = append(c.errs, e)
			}
			continue
		}
		c.add(t.Pos, tp, "test "+t.Name+": "+err.Error(), "")
	}
}

func (c *checker) faults() {
	if c.o.Faults == nil {
		return
	}
	for i := range c.lab.Faults {
		c.fault(fmt.Sprintf("faults[%d]", i), &c.lab.Faults[i], false)
	}
	for i := range c.o.FlagFaults {
		c.fault("", &c.o.FlagFaults[i], true)
	}
}

func (c *checker) fault(p string, f *labconfig.Fault, flag bool) {
	field := func(k string) string {
		if p == "" {
			return k
		}
		return p + "." + k
	}
	spec, ok := c.o.Faults[f.Name]
	if !ok {
		if flag { // the lab file's fault names are labconfig's
			var names []string
			for n := range c.o.Faults {
				names = append(names, n)
			}
			sort.Strings(names)
			fix := "labrunner faults lists them"
			if n := strictyaml.Nearest(f.Name, names); n != "" {
				fix = "did you mean " + n + "?"
			}
			c.add(f.Pos, field("name"), fmt.Sprintf("unknown fault %q", f.Name), fix)
		}
		return
	}
	switch spec.Scope {
	case "board":
		if f.Board == "" || f.Link != "" {
			c.add(f.Pos, field("board"), fmt.Sprintf("fault %s is a board's fault", f.Name), "aim it at one board: "+f.Name+"@BOARD")
		}
	case "link":
		if f.Link == "" {
			c.add(f.Pos, field("link"), fmt.Sprintf("fault %s is a cable's fault", f.Name), "aim it at one end of a cable: "+f.Name+"@BOARD:PORT")
		}
	case "rack":
		if f.Board != "" || f.Link != "" {
			c.add(f.Pos, field("board"), fmt.Sprintf("fault %s is a rack-wide fault", f.Name), "give it without @BOARD")
		}
	}
	if f.Board != "" {
		if _, b := c.boardIndex(f.Board); b == nil {
			if !flag {
				return // the lab file's board names are labconfig's
			}
			var names []string
			for _, b := range c.lab.Boards {
				names = append(names, b.Name)
			}
			fix := "boards: " + strings.Join(names, ", ")
			if n := strictyaml.Nearest(f.Board, names); n != "" {
				fix = "did you mean " + n + "?"
			}
			c.add(f.Pos, field("board"), fmt.Sprintf("no board %q in lab %s", f.Board, c.lab.Name), fix)
		} else if b.Emulated == nil {
			c.add(f.Pos, field("board"), fmt.Sprintf("board %s is not emulated: faults are injected by the emulated rack", f.Board), "aim it at an emulated board")
		}
	}
	if err := f.Params.Check(spec.Params...); err != nil {
		if errs, ok := err.(*labconfig.Errors); ok {
			for _, e := range errs.List {
				if e.Pos.Line == 0 && e.Pos.File == "" {
					e.Pos = f.Pos
				}
				e.Field = field("params." + e.Field)
				e.Msg = "fault " + f.Name + ": " + e.Msg
				c.errs = append(c.errs, e)
			}
		}
	}
}

// supports reports whether openFPGALoader supports part.
func supports(l *program.PartList, part string) bool {
	_, ok := l.Supports(part)
	return ok
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
