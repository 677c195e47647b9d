package bitstreams

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/internal/strictyaml"
)

//go:generate go run ./internal/genbit

// The embedded catalogue: manifests in catalogue/, the emulator's bitstream
// files in files/ (written by go generate; File.Path is relative to the
// manifest, so "../files/NAME").
//
//go:embed catalogue/*.yaml files
var embedded embed.FS

// EmbeddedPrefix starts the Path of every file read from the embedded
// catalogue, so that nobody mistakes it for a file on disk.
const EmbeddedPrefix = "embedded:"

// Catalogue is the set of known designs and their bitstream files. It is
// read-only once loaded; the manifests it hands out must not be modified.
type Catalogue struct {
	designs map[string]*Manifest
	names   []string
	fsys    fs.FS // the embedded catalogue; nil when loaded from disk
}

var (
	defaultOnce sync.Once
	defaultCat  *Catalogue
)

// Default returns the embedded catalogue. It is parsed once and shared. An
// embedded manifest that does not validate is a build defect (the package's
// tests catch it): Default panics with every problem listed.
func Default() *Catalogue {
	defaultOnce.Do(func() {
		c, err := loadFS(embedded, "catalogue", "")
		if err != nil {
			panic("bitstreams: the embedded catalogue is invalid (run go test ./bitstreams):\n" + err.Error())
		}
		c.fsys = embedded
		defaultCat = c
	})
	return defaultCat
}

// Load reads a catalogue from a directory: every *.yaml in it is a manifest
// (named after its design: exanet.yaml declares exanet), and each manifest's
// files are found relative to the directory. Load("bitstreams/catalogue")
// reads the same catalogue as Default, from the source tree. Every listed
// file must exist with the size the manifest gives.
func Load(dir string) (*Catalogue, error) {
	c, err := loadFS(os.DirFS(dir), ".", dir)
	if err != nil {
		return nil, err
	}
	var probs []Problem
	for _, n := range c.names {
		m := c.designs[n]
		for _, f := range m.Files {
			p := filepath.Join(dir, filepath.FromSlash(f.Path))
			st, err := os.Stat(p)
			switch {
			case err != nil:
				probs = append(probs, Problem{File: m.Source, Line: f.Line, Field: "files", Msg: fmt.Sprintf("%s: %v", f.Path, err), Fix: "fix the path, or re-run go generate ./bitstreams/..."})
			case f.Size > 0 && st.Size() != f.Size:
				probs = append(probs, Problem{File: m.Source, Line: f.Line, Field: "files", Msg: fmt.Sprintf("%s is %d bytes, the manifest lists %d", f.Path, st.Size(), f.Size), Fix: "the file changed: re-run go generate ./bitstreams/... or copy it again"})
			}
		}
	}
	if len(probs) > 0 {
		return nil, &Errors{List: probs}
	}
	return c, nil
}

// loadFS parses the manifests in dir of fsys; shown is the directory as the
// person knows it ("" for the embedded catalogue).
func loadFS(fsys fs.FS, dir, shown string) (*Catalogue, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("list manifests in %s: %w", shown, err)
	}
	if len(names) == 0 && shown != "" {
		return nil, fmt.Errorf("no manifests (*.yaml) in %s (give the catalogue directory, e.g. bitstreams/catalogue)", shown)
	}
	sort.Strings(names)
	c := &Catalogue{designs: map[string]*Manifest{}}
	var all Errors
	for _, n := range names {
		data, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, fmt.Errorf("read manifest: %w", err)
		}
		src := "bitstreams/catalogue/" + path.Base(n) + " (embedded)"
		if shown != "" {
			src = filepath.Join(shown, path.Base(n))
		}
		m, err := ParseManifest(src, data)
		var errs *Errors
		if errors.As(err, &errs) {
			all.List = append(all.List, errs.List...)
			continue
		} else if err != nil {
			return nil, err
		}
		m.Dir = shown
		if want := strings.TrimSuffix(path.Base(n), ".yaml"); m.Name != want {
			all.List = append(all.List, Problem{File: src, Line: 1, Field: "name", Msg: fmt.Sprintf("the manifest %s declares design %q", path.Base(n), m.Name), Fix: "name the file after the design: " + m.Name + ".yaml"})
			continue
		}
		c.designs[m.Name] = m
		c.names = append(c.names, m.Name)
	}
	if len(all.List) > 0 {
		return nil, &all
	}
	sort.Strings(c.names)
	return c, nil
}

// Design returns the manifest of a design.
func (c *Catalogue) Design(name string) (*Manifest, error) {
	if m, ok := c.designs[name]; ok {
		return m, nil
	}
	fix := "known: " + strings.Join(c.names, ", ")
	if n := strictyaml.Nearest(name, c.names); n != "" {
		fix = "did you mean " + n + "?"
	}
	return nil, fmt.Errorf("unknown design %q (%s)", name, fix)
}

// Designs returns every manifest, sorted by design name.
func (c *Catalogue) Designs() []*Manifest {
	out := make([]*Manifest, len(c.names))
	for i, n := range c.names {
		out[i] = c.designs[n]
	}
	return out
}

// Names returns the design names, sorted (for labconfig.Known.Designs).
func (c *Catalogue) Names() []string { return append([]string(nil), c.names...) }

// FilePath returns how a catalogue file is named in messages and in
// drivers.Image.Path: its path on disk, or "embedded:bitstreams/files/NAME".
func (c *Catalogue) FilePath(m *Manifest, f *File) string {
	if m.Dir == "" {
		return EmbeddedPrefix + "bitstreams/" + path.Join("catalogue", f.Path)
	}
	return filepath.Join(m.Dir, filepath.FromSlash(f.Path))
}

func (c *Catalogue) read(m *Manifest, f *File) ([]byte, error) {
	if m.Dir == "" && c.fsys != nil {
		return fs.ReadFile(c.fsys, path.Join("catalogue", f.Path))
	}
	return os.ReadFile(filepath.Join(m.Dir, filepath.FromSlash(f.Path)))
}

// FileFor returns the file built from design for a board's part, with its
// bytes: with formats (a programmer's, in its order of preference, see
// drivers/program.Formats), the first listed file of the first format the
// catalogue has for that device and package; without, the first file
// listed for it. A part the design has files for, but none in formats the
// programmer loads, is a setup error naming the formats there are.
func (c *Catalogue) FileFor(design, boardPart string, formats ...string) (*Manifest, *File, []byte, error) {
	m, err := c.Design(design)
	if err != nil {
		return nil, nil, nil, err
	}
	if m.Builtin {
		return nil, nil, nil, drivers.Setup(m.Source, "find bitstream", "program a design; reach "+m.Name+" through its registers on any board",
			fmt.Errorf("%s is built into every board: it has no bitstream and is never programmed", m.Name))
	}
	f, have := m.fileFor(boardPart, formats)
	if f != nil {
		data, err := c.read(m, f)
		if err != nil {
			return nil, nil, nil, drivers.Setup(c.FilePath(m, f), "read bitstream", "re-run go generate ./bitstreams/... or fix the manifest's path", err)
		}
		return m, f, data, nil
	}
	if len(have) > 0 {
		return nil, nil, nil, drivers.Setup(m.Source, "find bitstream",
			fmt.Sprintf("build a .%s of %s for %s and list it, or use a programmer that loads .%s", formats[0], m.Name, boardPart, strings.Join(have, " or .")),
			fmt.Errorf("design %s has only .%s for part %s; this board's programmer loads .%s", m.Name, strings.Join(have, ", ."), boardPart, strings.Join(formats, " or .")))
	}
	var built []string
	for _, f := range m.Files {
		built = append(built, f.Part)
	}
	msg := "it lists no files"
	if len(built) > 0 {
		msg = "files are built for " + strings.Join(built, ", ")
	}
	return nil, nil, nil, drivers.Setup(m.Source, "find bitstream", "build the design for that part and list the file, or use a board of a listed part",
		fmt.Errorf("design %s has no bitstream for part %s (%s)", m.Name, boardPart, msg))
}

// fileFor picks m's file for a part in one of formats (any format when
// none is given); have lists the formats m has for the part when none fits.
func (m *Manifest) fileFor(part string, formats []string) (f *File, have []string) {
	wants := formats
	if len(wants) == 0 {
		wants = []string{""}
	}
	for _, want := range wants {
		for i := range m.Files {
			g := &m.Files[i]
			if SamePart(g.Part, part) && (want == "" || strings.EqualFold(g.Format, want)) {
				return g, nil
			}
		}
	}
	for _, g := range m.Files {
		if SamePart(g.Part, part) && !slices.Contains(have, g.Format) {
			have = append(have, g.Format)
		}
	}
	return nil, have
}

// Image finds the design's file for a board's part and checks it: what a
// runner hands to a drivers.Programmer.
func (c *Catalogue) Image(design, boardPart string) (drivers.Image, error) {
	m, f, data, err := c.FileFor(design, boardPart)
	if err != nil {
		return drivers.Image{}, err
	}
	return c.Check(m, c.FilePath(m, f), data, boardPart)
}

// Check decides whether a bitstream file may be loaded into a board with
// part boardPart, touching nothing. It refuses, with an error naming the
// file, the board part and the fix (class setup, see drivers.ClassOf):
//   - a design not built for the board's part, or a file whose header names
//     another device or package;
//   - a truncated or corrupt file (header inconsistent, configuration data
//     running past the end, sync word missing);
//   - a file the manifest lists (matched by content, else by name) whose
//     size, sha256 or, for .rbf/.sof, Quartus checksum differ from the list.
//
// A file the manifest does not list (a plan's own bitstream) is checked
// only as far as its format allows. On success the Image carries the data,
// its sha256, the part, the design, and for .bit files Bin (ToBin) for
// fpga_manager (.bin files are their own Bin).
func (c *Catalogue) Check(m *Manifest, path string, data []byte, boardPart string) (drivers.Image, error) {
	fail := func(fe *FileError) (drivers.Image, error) {
		if fe.File == "" {
			fe.File = path
		}
		return drivers.Image{}, &drivers.Error{Class: drivers.ClassSetup, Err: fe}
	}
	if m == nil {
		return fail(fileErr(ErrFormat, "look the design up in the catalogue first", "no design manifest given"))
	}
	if strings.TrimSpace(boardPart) == "" {
		return fail(fileErr(ErrWrongPart, "give the board's kind in the lab file", "the board's part is unknown"))
	}
	partOK := len(m.Parts) == 0
	for _, p := range m.Parts {
		partOK = partOK || SamePart(p, boardPart)
	}
	if !partOK {
		return fail(fileErr(ErrWrongPart, "put the design on a board with one of those parts, or add the part to "+m.Source+" and build for it",
			"design %s is built for %s; the board's part is %s", m.Name, strings.Join(m.Parts, ", "), boardPart))
	}
	info, err := Parse(path, data)
	if err != nil {
		var fe *FileError
		if errors.As(err, &fe) {
			fe.Msg += " (board part " + boardPart + ")"
			return fail(fe)
		}
		return drivers.Image{}, drivers.Setup(path, "check bitstream", "", err)
	}
	entry := c.entryFor(m, path, info.SHA256)
	if info.Part != "" && !SamePart(info.Part, boardPart) {
		return fail(fileErr(ErrWrongPart, c.partFix(m, boardPart), "built for part %s, but the board's part is %s", info.Part, boardPart))
	}
	part := info.Part
	if entry != nil {
		if info.Part == "" && !SamePart(entry.Part, boardPart) {
			return fail(fileErr(ErrWrongPart, c.partFix(m, boardPart), "%s lists it as built for part %s, but the board's part is %s", m.Source, entry.Part, boardPart))
		}
		if part == "" {
			part = entry.Part
		}
		switch {
		case entry.Size > 0 && info.Size < entry.Size:
			return fail(fileErr(ErrTruncated, fixRecopy, "%d bytes, but %s lists %d for it (board part %s)", info.Size, m.Source, entry.Size, boardPart))
		case entry.Size > 0 && info.Size != entry.Size:
			return fail(fileErr(ErrMismatch, fixRecopy, "%d bytes, but %s lists %d for it (board part %s)", info.Size, m.Source, entry.Size, boardPart))
		case entry.SHA256 != "" && entry.SHA256 != info.SHA256:
			return fail(fileErr(ErrMismatch, "the file was changed or damaged: copy it again; if you rebuilt it on purpose, re-run go generate ./bitstreams/... or update the manifest",
				"sha256 %s, but %s lists %s for it (board part %s)", info.SHA256, m.Source, entry.SHA256, boardPart))
		}
		if entry.Checksum != "" && (info.Format == "rbf" || info.Format == "sof") {
			want, err := parseChecksum(entry.Checksum)
			if err == nil && want != info.Checksum {
				return fail(fileErr(ErrMismatch, fixRecopy, "Quartus checksum 0x%08X, but %s lists %s for it (board part %s)", info.Checksum, m.Source, entry.Checksum, boardPart))
			}
		}
	}
	img := drivers.Image{Path: path, Design: m.Name, Part: part, SHA256: info.SHA256, Data: data}
	switch info.Format {
	case "bit":
		bin, err := ToBin(data)
		if err != nil {
			var fe *FileError
			if errors.As(err, &fe) {
				return fail(fe)
			}
			return drivers.Image{}, err
		}
		img.Bin = bin
		img.Raw = data[info.HeaderLen:]
	case "bin":
		// Each programmer gets the byte order it loads: fpga_manager the
		// swapped words, JTAG loaders the .bit's order.
		if info.Swapped {
			img.Bin, img.Raw = data, SwapWords(data)
		} else {
			img.Bin, img.Raw = SwapWords(data), data
		}
	}
	return img, nil
}

// entryFor finds the manifest's entry for a file: the one with the same
// content, else the one with the same file name.
func (c *Catalogue) entryFor(m *Manifest, p, sha string) *File {
	for i := range m.Files {
		if m.Files[i].SHA256 != "" && m.Files[i].SHA256 == sha {
			return &m.Files[i]
		}
	}
	base := filepath.Base(strings.TrimPrefix(p, EmbeddedPrefix))
	for i := range m.Files {
		if path.Base(m.Files[i].Path) == base {
			return &m.Files[i]
		}
	}
	return nil
}

func (c *Catalogue) partFix(m *Manifest, boardPart string) string {
	for i := range m.Files {
		if SamePart(m.Files[i].Part, boardPart) {
			return "use " + c.FilePath(m, &m.Files[i]) + ", built for " + m.Files[i].Part
		}
	}
	return "build " + m.Name + " for " + boardPart
}
