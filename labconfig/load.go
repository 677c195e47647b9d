package labconfig

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"

	"github.com/labrunner/labrunner/internal/strictyaml"
)

//go:embed default.yaml
var defaultYAML []byte

// DefaultFile is the Pos.File of the embedded default lab.
const DefaultFile = "default.yaml (embedded)"

// Default serial speeds, used when a lab file leaves baud out.
const (
	DefaultConsoleBaud = 115200
	DefaultBridgeBaud  = 921600
)

// DefaultResultsRoot is where run directories go when results.root is left out.
const DefaultResultsRoot = "runs"

// Defaults of the fpga_manager programmer.
const (
	DefaultSysfs       = "/sys"
	DefaultFirmwareDir = "/lib/firmware"
	DefaultManager     = "fpga0"
)

// DefaultSource returns the embedded default lab file, for commands that
// write a copy for a person to edit.
func DefaultSource() []byte { return append([]byte(nil), defaultYAML...) }

// Default loads the embedded default lab: the emulated rack.
func Default(known Known) (*Lab, error) {
	return Parse(DefaultFile, defaultYAML, known)
}

// Load reads and validates a lab file. A file that does not validate comes
// back as *Errors listing every problem.
func Load(path string, known Known) (*Lab, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read lab file: %w (check the --lab path)", err)
	}
	return Parse(path, data, known)
}

// Parse decodes and validates a lab file's bytes; name is used in positions.
// Every problem is reported (as *Errors), each with file:line, the field,
// what is wrong and the fix. On success every default is filled in: the
// deadlines (DefaultDeadlines; a test without a deadline gets
// deadlines.test), the results root, console and bridge baud rates, the
// fpga_manager paths, and power type "none".
func Parse(name string, data []byte, known Known) (*Lab, error) {
	root, prob := strictyaml.Root(data, "lab file")
	if prob != nil {
		return nil, &Errors{List: []Error{{Pos: Pos{File: name, Line: prob.Line}, Field: prob.Field, Msg: prob.Msg, Fix: prob.Fix}}}
	}
	d := strictyaml.NewDecoder(name)
	d.Hooks[paramsType] = decodeParams
	lab := &Lab{}
	d.Decode(root, "", lab)
	lab.Pos = Pos{File: name, Line: max(root.Line, 1)}
	c := &checker{file: name, lines: d.Lines, known: known, broken: map[string]bool{}}
	for _, p := range d.Problems {
		c.broken[p.Field] = true
		c.errs = append(c.errs, Error{Pos: Pos{File: name, Line: p.Line}, Field: p.Field, Msg: p.Msg, Fix: p.Fix})
	}
	c.lab(lab)
	if len(c.errs) > 0 {
		sortErrors(c.errs)
		return nil, &Errors{List: c.errs}
	}
	return lab, nil
}

// Resolve turns a path written in the lab file (a plan's bitstream) into one
// usable from the working directory: relative paths are taken relative to
// the lab file's directory. Paths in the embedded lab are left as written.
func (l *Lab) Resolve(p string) string {
	if p == "" || filepath.IsAbs(p) || l.Pos.File == DefaultFile || l.Pos.File == "" {
		return p
	}
	return filepath.Join(filepath.Dir(l.Pos.File), p)
}

// Board returns the board of that name.
func (l *Lab) Board(name string) (*Board, bool) {
	for i := range l.Boards {
		if l.Boards[i].Name == name {
			return &l.Boards[i], true
		}
	}
	return nil, false
}

// Plan returns the plan of that name.
func (l *Lab) Plan(name string) (*Plan, bool) {
	for i := range l.Plans {
		if l.Plans[i].Name == name {
			return &l.Plans[i], true
		}
	}
	return nil, false
}

// IsEmulated reports whether the board is one of the emulated rack's.
func (b *Board) IsEmulated() bool { return b.Emulated != nil }
