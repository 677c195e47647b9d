package bitstreams

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/internal/strictyaml"
)

// Problem is one thing wrong with a manifest.
type Problem struct {
	File  string
	Line  int
	Field string // e.g. registers[12].fields[1].bits
	Msg   string
	Fix   string
}

func (p Problem) String() string {
	s := fmt.Sprintf("%s:%d: ", p.File, p.Line)
	if p.Field != "" {
		s += p.Field + ": "
	}
	s += p.Msg
	if p.Fix != "" {
		s += " (" + p.Fix + ")"
	}
	return s
}

// Errors lists every problem found in one or more manifests, one per line
// when printed.
type Errors struct {
	List []Problem
}

func (e *Errors) Error() string {
	lines := make([]string, len(e.List))
	for i, p := range e.List {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Formats the catalogue knows.
var Formats = []string{"bit", "bin", "rbf", "sof"}

// Counter units, accumulations and rollovers a manifest may name.
var (
	counterUnits  = []string{"cycles", "packets", "bytes", "words", "errors"}
	accumulations = []string{"", "total", "last"}
	rollovers     = []string{"", "wrap", "saturate"}
	accesses      = []Access{RO, RW, WO, RC, Pop, W1C}
	windowAccess  = []Access{RO, RW, Pop}
)

var (
	designNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)
	regNameRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	bitsRE       = regexp.MustCompile(`^\s*(\d{1,2})\s*(?::\s*(\d{1,2})\s*)?$`)
	sha256RE     = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// DefaultFormat is the format built for a part when the manifest names none:
// bit for Xilinx parts (xc..., and 'b' fields such as 7z020clg484 that
// Vivado writes without the xc), rbf for Intel parts (5sgx..., 10ax..., ep...).
func DefaultFormat(part string) string {
	return DefaultFormats(part)[0]
}

// DefaultFormats returns the formats built for a part when the manifest
// does not say: what each programmer of that vendor loads. Xilinx: the .bit
// (fpga_manager's byte-swapped .bin and the JTAG loaders' .bin are derived
// from it when a board is programmed, see Catalogue.Check). Intel: the .sof
// quartus_pgm loads over JTAG, and the .rbf for loaders that take raw
// configuration data (openFPGALoader, passive serial).
func DefaultFormats(part string) []string {
	if vendorOf(part) == "intel" {
		return []string{"sof", "rbf"}
	}
	return []string{"bit"}
}

// FormatsFor returns the formats built for a part of m.
func (m *Manifest) FormatsFor(part string) []string {
	if len(m.Formats) > 0 {
		return m.Formats
	}
	return DefaultFormats(part)
}

// ParseManifest decodes and validates one manifest; name is used in
// positions (and as Manifest.Source). Every problem is reported as *Errors.
func ParseManifest(name string, data []byte) (*Manifest, error) {
	root, prob := strictyaml.Root(data, "manifest")
	if prob != nil {
		return nil, &Errors{List: []Problem{{File: name, Line: prob.Line, Field: prob.Field, Msg: prob.Msg, Fix: prob.Fix}}}
	}
	d := strictyaml.NewDecoder(name)
	m := &Manifest{}
	d.Decode(root, "", m)
	m.Source = name
	v := &mcheck{file: name, lines: d.Lines}
	for _, p := range d.Problems {
		v.add(p.Line, p.Field, p.Msg, p.Fix)
	}
	v.manifest(m)
	if len(v.list) > 0 {
		sort.SliceStable(v.list, func(i, j int) bool { return v.list[i].Line < v.list[j].Line })
		return nil, &Errors{List: v.list}
	}
	return m, nil
}

type mcheck struct {
	file  string
	lines map[string]int
	list  []Problem
}

func (v *mcheck) add(line int, field, msg, fix string) {
	v.list = append(v.list, Problem{File: v.file, Line: max(line, 1), Field: field, Msg: msg, Fix: fix})
}

// at records a problem on the line of key path, or on fallback.
func (v *mcheck) at(path string, fallback int, msg, fix string) {
	if l, ok := v.lines[path]; ok {
		fallback = l
	}
	v.add(fallback, path, msg, fix)
}

func contains[T comparable](list []T, x T) bool {
	for _, y := range list {
		if y == x {
			return true
		}
	}
	return false
}

func (v *mcheck) manifest(m *Manifest) {
	switch {
	case m.Name == "":
		v.at("name", 1, "the design has no name", "add name: NAME (lower case, as plans name it)")
	case !designNameRE.MatchString(m.Name):
		v.at("name", 1, fmt.Sprintf("design name %q is not lower-case letters, digits, '_' and '-'", m.Name), "")
	}
	if m.Version == "" {
		v.at("version", 1, "the design has no version", "add version: 1.0.0")
	}
	if len(m.Parts) == 0 && !m.Builtin {
		v.at("parts", 1, "the design lists no parts", "add parts: [xczu9eg-ffvc900-1-e] (device-package-speed-temperature)")
	}
	if m.Builtin && len(m.Files) > 0 {
		v.at("files", 1, "a builtin block has no bitstream, yet files are listed", "remove the files, or drop builtin: true")
	}
	for i, p := range m.Parts {
		fp := fmt.Sprintf("parts[%d]", i)
		if strings.TrimSpace(p) == "" {
			v.at(fp, 1, "empty part name", "")
			continue
		}
		for j := 0; j < i; j++ {
			if SamePart(p, m.Parts[j]) {
				v.at(fp, 1, fmt.Sprintf("part %s is the same device and package as %s", p, m.Parts[j]), "list each device-package once: a bitstream built for one loads on every speed and temperature grade")
			}
		}
	}
	if m.ClockMHz <= 0 {
		v.at("clock_mhz", 1, "the design's clock must be more than 0 MHz", "add clock_mhz: 156.25")
	}
	if m.ID == 0 {
		v.at("id", 1, "the design has no ID value", "add id: 0x... (what the ID register reads back)")
	}
	for i, f := range m.Formats {
		if !contains(Formats, f) {
			v.at(fmt.Sprintf("formats[%d]", i), 1, fmt.Sprintf("unknown format %q", f), "use one of: "+strings.Join(Formats, ", "))
		}
	}
	v.windows(m)
	v.registers(m)
	v.files(m)
	v.config(m)
	v.report("report", m.Report)
}

// config checks the declared configuration values: named once, each
// register a field or register of the map whose width holds the value, a
// source, and a reason wherever the declared value is not the paper's. A
// value also given under params must agree with it.
func (v *mcheck) config(m *Manifest) {
	seen := map[string]int{}
	for i, c := range m.Config {
		p := fmt.Sprintf("config[%d]", i)
		switch {
		case c.Name == "":
			v.at(p+".name", c.Line, "configuration value has no name", "add name: fallthrough_ns (the key tests and golden models use)")
		default:
			if prev, dup := seen[c.Name]; dup {
				v.at(p+".name", c.Line, fmt.Sprintf("configuration value %s is declared twice (first on line %d)", c.Name, prev), "")
			}
			seen[c.Name] = c.Line
		}
		if c.Source == "" {
			v.at(p+".source", c.Line, fmt.Sprintf("configuration value %s has no source", c.Name), "name the paper and section the value comes from, or why the build chose it")
		}
		if c.Value < 0 || c.Value != float64(uint64(c.Value)) {
			v.at(p+".value", c.Line, fmt.Sprintf("configuration value %s = %g is not a whole number of register units", c.Name, c.Value), "give the value in the units its register reads")
		}
		if c.Register != "" {
			width, err := m.ConfigWidth(c.Register)
			if err != nil {
				v.at(p+".register", c.Line, err.Error(), "name a register, REG[i] or REG.FIELD of this map")
			} else if width < 64 && uint64(c.Value)>>uint(width) != 0 {
				v.at(p+".value", c.Line, fmt.Sprintf("%s = %g does not fit the %d bits of %s", c.Name, c.Value, width, c.Register), "")
			}
		}
		if c.Paper != nil && *c.Paper != c.Value && c.Deviation == "" {
			v.at(p+".deviation", c.Line, fmt.Sprintf("%s is declared %g, the paper says %g", c.Name, c.Value, *c.Paper), "say why in deviation:, or declare the paper's value")
		}
		if s, ok := m.Params[c.Name]; ok {
			if f, err := strconv.ParseFloat(s, 64); err != nil || f != c.Value {
				v.at(p+".value", c.Line, fmt.Sprintf("%s is declared %g here and %q under params", c.Name, c.Value, s), "keep the two equal")
			}
		}
	}
}

// configRegister finds the register of a configuration reference: a
// register, an array element, or a whole array (every element must hold
// the value).
func (m *Manifest) configRegister(reg string) (Register, error) {
	for _, r := range m.Registers {
		if r.Name == reg && r.Count > 1 {
			return r, nil
		}
	}
	r, _, err := m.Lookup(reg)
	return r, err
}

// ConfigRegisters returns the register names a configuration reference
// covers, each with the field it names ("" for the whole register): one
// name, or every element of an array named without an index.
func (m *Manifest) ConfigRegisters(ref string) (names []string, field string, err error) {
	reg, field, _ := strings.Cut(ref, ".")
	r, err := m.configRegister(reg)
	if err != nil {
		return nil, "", err
	}
	if r.Count > 1 && !strings.Contains(reg, "[") {
		for i := 0; i < r.Count; i++ {
			names = append(names, elementName(&r, i))
		}
		return names, field, nil
	}
	return []string{reg}, field, nil
}

// ConfigWidth resolves a configuration value's register reference ("REG",
// "REG[i]" or "REG.FIELD", "REG[i].FIELD") and returns its width in bits.
func (m *Manifest) ConfigWidth(ref string) (int, error) {
	reg, field, _ := strings.Cut(ref, ".")
	r, err := m.configRegister(reg)
	if err != nil {
		return 0, err
	}
	if field == "" {
		return r.Width, nil
	}
	for _, f := range r.Fields {
		if f.Name == field {
			lo, hi, err := ParseBits(f.Bits)
			if err != nil {
				return 0, err
			}
			return int(hi-lo) + 1, nil
		}
	}
	return 0, fmt.Errorf("design %s: register %s has no field %s", m.Name, r.Name, field)
}

// Declared returns the configuration value the design declares under name.
func (m *Manifest) Declared(name string) (ConfigValue, error) {
	for _, c := range m.Config {
		if c.Name == name {
			return c, nil
		}
	}
	return ConfigValue{}, fmt.Errorf("design %s %s declares no configuration value %q (add it to the config: block of %s)", m.Name, m.Version, name, m.Source)
}

func (v *mcheck) windows(m *Manifest) {
	if len(m.Windows) == 0 {
		v.at("windows", 1, "the design has no address windows", "add windows: [{name: ctrl, base: 0, size: 0x1000, access: rw}]")
	}
	names := map[string]int{}
	for i, w := range m.Windows {
		p := fmt.Sprintf("windows[%d]", i)
		if w.Name == "" {
			v.at(p+".name", w.Line, "window has no name", "")
		} else if prev, dup := names[w.Name]; dup {
			v.at(p+".name", w.Line, fmt.Sprintf("window %s is declared twice (first on line %d)", w.Name, prev), "")
		} else {
			names[w.Name] = w.Line
		}
		if w.Size == 0 {
			v.at(p+".size", w.Line, "window has no size", "")
		}
		if w.Base%4 != 0 || w.Size%4 != 0 {
			v.at(p, w.Line, fmt.Sprintf("window base 0x%x and size 0x%x must be multiples of 4", w.Base, w.Size), "registers are 32-bit words")
		}
		if w.Base+w.Size < w.Base {
			v.at(p, w.Line, "window runs past the end of the 64-bit address space", "")
		}
		if !contains(windowAccess, w.Access) {
			v.at(p+".access", w.Line, fmt.Sprintf("window access %q is not ro, rw or pop", w.Access), "")
		}
	}
	idx := make([]int, len(m.Windows))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return m.Windows[idx[a]].Base < m.Windows[idx[b]].Base })
	for k := 1; k < len(idx); k++ {
		a, b := m.Windows[idx[k-1]], m.Windows[idx[k]]
		if a.Base+a.Size > b.Base {
			v.at(fmt.Sprintf("windows[%d]", idx[k]), b.Line, fmt.Sprintf("window %s (0x%x..0x%x) overlaps window %s (0x%x..0x%x)", b.Name, b.Base, b.Base+b.Size-1, a.Name, a.Base, a.Base+a.Size-1), "windows must not overlap")
		}
	}
}

// ParseBits parses a field's "hi:lo" or "n".
func ParseBits(s string) (lo, hi uint, err error) {
	m := bitsRE.FindStringSubmatch(s)
	if m == nil {
		return 0, 0, fmt.Errorf("bits %q is not \"hi:lo\" or a single bit number", s)
	}
	h, _ := strconv.Atoi(m[1])
	l := h
	if m[2] != "" {
		l, _ = strconv.Atoi(m[2])
	}
	if h < l {
		return 0, 0, fmt.Errorf("bits %q has hi below lo (write hi:lo, e.g. 7:0)", s)
	}
	return uint(l), uint(h), nil
}

func (v *mcheck) registers(m *Manifest) {
	if len(m.Registers) == 0 {
		v.at("registers", 1, "the design has no registers", "")
	}
	byName := map[string]int{}
	for i := range m.Registers {
		r := &m.Registers[i]
		if r.Name != "" {
			if _, dup := byName[r.Name]; !dup {
				byName[r.Name] = i
			}
		}
	}
	slots := map[uint64]string{} // word address -> element name
	seen := map[string]int{}
	for i := range m.Registers {
		r := &m.Registers[i]
		p := fmt.Sprintf("registers[%d]", i)
		switch {
		case r.Name == "":
			v.at(p+".name", r.Line, "register has no name", "")
		case !regNameRE.MatchString(r.Name):
			v.at(p+".name", r.Line, fmt.Sprintf("register name %q is not letters, digits and '_'", r.Name), "brackets and dots are for array elements and fields")
		default:
			if prev, dup := seen[r.Name]; dup {
				v.at(p+".name", r.Line, fmt.Sprintf("register %s is declared twice (first on line %d)", r.Name, prev), "give each register its own name")
			} else {
				seen[r.Name] = r.Line
			}
		}
		if r.Width < 1 || r.Width > 32 {
			v.at(p+".width", r.Line, fmt.Sprintf("width %d is outside 1..32", r.Width), "registers are at most 32 bits")
		} else if r.Width < 32 && uint64(r.Reset)>>uint(r.Width) != 0 {
			v.at(p+".reset", r.Line, fmt.Sprintf("reset value 0x%x does not fit %d bits", r.Reset, r.Width), "")
		}
		if !contains(accesses, r.Access) {
			v.at(p+".access", r.Line, fmt.Sprintf("access %q is not one of ro, rw, wo, rc, pop, w1c", r.Access), "")
		}
		if r.Offset%4 != 0 {
			v.at(p+".offset", r.Line, fmt.Sprintf("offset 0x%x is not 4-byte aligned", r.Offset), "registers are 32-bit words at multiples of 4")
		}
		switch {
		case r.Count < 0:
			v.at(p+".count", r.Line, "count is negative", "")
		case r.Count > 1 && (r.Stride == 0 || r.Stride%4 != 0):
			v.at(p+".stride", r.Line, fmt.Sprintf("an array of %d needs a stride that is a non-zero multiple of 4, got 0x%x", r.Count, r.Stride), "add stride: 0x40 (bytes between elements)")
		case r.Count <= 1 && r.Stride != 0:
			v.at(p+".stride", r.Line, "stride given for a register that is not an array", "add count: N or remove stride")
		case r.Count > 4096:
			v.at(p+".count", r.Line, fmt.Sprintf("array of %d registers: describe a FIFO or memory as a window instead", r.Count), "")
		}
		if r.Offset%4 == 0 && r.Count >= 0 && r.Count <= 4096 && (r.Count <= 1 || (r.Stride != 0 && r.Stride%4 == 0)) {
			for e := 0; e < max(r.Count, 1); e++ {
				addr := r.Offset + uint64(e)*r.Stride
				name := elementName(r, e)
				inside := false
				for _, w := range m.Windows {
					inside = inside || w.Contains(addr)
				}
				if !inside {
					v.at(p+".offset", r.Line, fmt.Sprintf("%s at 0x%x is outside every window", name, addr), "move it into a window or add a window for it")
				}
				if other, dup := slots[addr]; dup {
					v.at(p+".offset", r.Line, fmt.Sprintf("%s at 0x%x overlaps %s", name, addr, other), "give it its own address")
				} else {
					slots[addr] = name
				}
			}
		}
		v.fields(p, r)
		if c := r.Counter; c != nil {
			v.counter(p+".counter", r, m, byName)
		}
	}
}

func (v *mcheck) fields(p string, r *Register) {
	var used uint64
	names := map[string]bool{}
	for j := range r.Fields {
		f := &r.Fields[j]
		fp := fmt.Sprintf("%s.fields[%d]", p, j)
		if f.Name == "" {
			v.at(fp+".name", r.Line, "field has no name", "")
		} else if names[f.Name] {
			v.at(fp+".name", r.Line, fmt.Sprintf("field %s.%s is declared twice", r.Name, f.Name), "")
		}
		names[f.Name] = true
		lo, hi, err := ParseBits(f.Bits)
		if err != nil {
			v.at(fp+".bits", r.Line, err.Error(), `write bits: "7:0" or bits: "3"`)
			continue
		}
		f.Lo, f.Hi = lo, hi
		if r.Width >= 1 && int(hi) >= r.Width {
			v.at(fp+".bits", r.Line, fmt.Sprintf("field %s bits %d:%d lie outside the register's %d bits", f.Name, hi, lo, r.Width), "widen the register or fix the bits")
			continue
		}
		mask := (uint64(1)<<(hi-lo+1) - 1) << lo
		if used&mask != 0 {
			v.at(fp+".bits", r.Line, fmt.Sprintf("field %s bits %d:%d overlap another field of %s", f.Name, hi, lo, r.Name), "")
		}
		used |= mask
	}
}

func (v *mcheck) counter(p string, r *Register, m *Manifest, byName map[string]int) {
	c := r.Counter
	if !contains(counterUnits, c.Unit) {
		v.at(p+".unit", r.Line, fmt.Sprintf("counter unit %q is not one of %s", c.Unit, strings.Join(counterUnits, ", ")), "")
	}
	if !contains(accumulations, c.Accumulation) {
		v.at(p+".accumulation", r.Line, fmt.Sprintf("accumulation %q is not total or last", c.Accumulation), "")
	}
	if !contains(rollovers, c.Rollover) {
		v.at(p+".rollover", r.Line, fmt.Sprintf("rollover %q is not wrap or saturate", c.Rollover), "")
	}
	if c.ClockMHz < 0 {
		v.at(p+".clock_mhz", r.Line, "counter clock is negative", "")
	}
	if !r.Access.Readable() {
		v.at(p, r.Line, fmt.Sprintf("a counter cannot be write-only (access %s)", r.Access), "")
	}
	if c.Hi != "" {
		i, ok := byName[c.Hi]
		switch {
		case !ok:
			v.at(p+".hi", r.Line, fmt.Sprintf("counter's upper half %q is not a register of %s", c.Hi, m.Name), "name the register that holds bits 63:32")
		case max(m.Registers[i].Count, 1) != max(r.Count, 1):
			v.at(p+".hi", r.Line, fmt.Sprintf("%s has %d elements, its upper half %s has %d", r.Name, max(r.Count, 1), c.Hi, max(m.Registers[i].Count, 1)), "")
		}
	}
}

func (v *mcheck) files(m *Manifest) {
	paths := map[string]int{}
	for i := range m.Files {
		f := &m.Files[i]
		p := fmt.Sprintf("files[%d]", i)
		switch {
		case f.Path == "":
			v.at(p+".path", f.Line, "file has no path", "")
		case path.IsAbs(f.Path) || strings.Contains(f.Path, `\`):
			v.at(p+".path", f.Line, fmt.Sprintf("path %s must be relative to the manifest, with '/'", f.Path), "")
		default:
			if prev, dup := paths[f.Path]; dup {
				v.at(p+".path", f.Line, fmt.Sprintf("file %s is listed twice (first on line %d)", f.Path, prev), "")
			}
			paths[f.Path] = f.Line
			if ext := strings.TrimPrefix(strings.ToLower(path.Ext(f.Path)), "."); ext != f.Format {
				v.at(p+".format", f.Line, fmt.Sprintf("format %q does not match the file name %s", f.Format, path.Base(f.Path)), "")
			}
		}
		if !contains(Formats, f.Format) {
			v.at(p+".format", f.Line, fmt.Sprintf("unknown format %q", f.Format), "use one of: "+strings.Join(Formats, ", "))
		}
		found := false
		for _, part := range m.Parts {
			found = found || SamePart(part, f.Part)
		}
		if !found {
			v.at(p+".part", f.Line, fmt.Sprintf("part %q is not one of the design's parts (%s)", f.Part, strings.Join(m.Parts, ", ")), "")
		}
		if f.SHA256 != "" && !sha256RE.MatchString(f.SHA256) {
			v.at(p+".sha256", f.Line, "sha256 is not 64 lower-case hex digits", "re-run go generate ./bitstreams/...")
		}
		if f.Size < 0 {
			v.at(p+".size", f.Line, "size is negative", "")
		}
		if f.Checksum != "" {
			if _, err := parseChecksum(f.Checksum); err != nil {
				v.at(p+".checksum", f.Line, err.Error(), `write checksum: "0x0123ABCD"`)
			}
		}
	}
}

func parseChecksum(s string) (uint32, error) {
	u, err := strictyaml.ParseUint(s)
	if err != nil || u > 0xFFFFFFFF {
		return 0, fmt.Errorf("checksum %q is not a 32-bit number", s)
	}
	return uint32(u), nil
}

func elementName(r *Register, i int) string {
	if r.Count > 1 {
		return fmt.Sprintf("%s[%d]", r.Name, i)
	}
	return r.Name
}

// Element is one addressable register: a plain register, or one element of
// a register array (named like LINK_STATUS[1]).
type Element struct {
	Name string
	Addr uint64
	Reg  *Register
}

// Elements lists every register and array element of the design in
// declaration order.
func (m *Manifest) Elements() []Element {
	var out []Element
	for i := range m.Registers {
		r := &m.Registers[i]
		for e := 0; e < max(r.Count, 1); e++ {
			out = append(out, Element{Name: elementName(r, e), Addr: r.Offset + uint64(e)*r.Stride, Reg: r})
		}
	}
	return out
}

// Lookup finds a register by name: "ID", or "LINK_STATUS[1]" for an array
// element. It returns the register as declared and the element's address.
func (m *Manifest) Lookup(name string) (Register, uint64, error) {
	base, idx, hasIdx := name, 0, false
	if i := strings.IndexByte(name, '['); i >= 0 {
		if !strings.HasSuffix(name, "]") {
			return Register{}, 0, fmt.Errorf("design %s: register name %q: write NAME[index]", m.Name, name)
		}
		n, err := strconv.Atoi(name[i+1 : len(name)-1])
		if err != nil || n < 0 {
			return Register{}, 0, fmt.Errorf("design %s: register name %q: the index must be a number from 0", m.Name, name)
		}
		base, idx, hasIdx = name[:i], n, true
	}
	var r *Register
	for i := range m.Registers {
		if m.Registers[i].Name == base {
			r = &m.Registers[i]
			break
		}
	}
	if r == nil {
		for i := range m.Registers {
			if strings.EqualFold(m.Registers[i].Name, base) {
				r = &m.Registers[i]
				break
			}
		}
	}
	if r == nil {
		names := make([]string, len(m.Registers))
		for i := range m.Registers {
			names[i] = m.Registers[i].Name
		}
		hint := "see the register map in " + m.Source
		if n := strictyaml.Nearest(base, names); n != "" {
			hint = "did you mean " + n + "?"
		}
		return Register{}, 0, fmt.Errorf("design %s has no register %q (%s)", m.Name, base, hint)
	}
	count := max(r.Count, 1)
	switch {
	case r.Count > 1 && !hasIdx:
		return Register{}, 0, fmt.Errorf("design %s: %s is an array of %d: write %s[0] to %s[%d]", m.Name, r.Name, count, r.Name, r.Name, count-1)
	case r.Count <= 1 && hasIdx:
		return Register{}, 0, fmt.Errorf("design %s: %s is not an array: write %s", m.Name, r.Name, r.Name)
	case idx >= count:
		return Register{}, 0, fmt.Errorf("design %s: %s[%d] is out of range: the array has %d elements (0 to %d)", m.Name, r.Name, idx, count, count-1)
	}
	return *r, r.Offset + uint64(idx)*r.Stride, nil
}

// At returns the register element whose address is addr.
func (m *Manifest) At(addr uint64) (Element, bool) {
	for i := range m.Registers {
		r := &m.Registers[i]
		if addr < r.Offset {
			continue
		}
		d := addr - r.Offset
		switch {
		case r.Count <= 1 && d == 0:
			return Element{Name: r.Name, Addr: addr, Reg: r}, true
		case r.Count > 1 && r.Stride > 0 && d%r.Stride == 0 && d/r.Stride < uint64(r.Count):
			return Element{Name: elementName(r, int(d/r.Stride)), Addr: addr, Reg: r}, true
		}
	}
	return Element{}, false
}

// Window returns the window holding the word at addr. A runner refuses
// accesses outside every window before they reach the bus.
func (m *Manifest) Window(addr uint64) (Window, bool) {
	for _, w := range m.Windows {
		if w.Contains(addr) {
			return w, true
		}
	}
	return Window{}, false
}
