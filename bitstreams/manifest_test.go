package bitstreams

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExanetManifest(t *testing.T) {
	m, err := Default().Design("exanet")
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != "1.2.0" || m.ClockMHz != 156.25 || m.ID != 0x45584E54 || m.VersionWord != 0x00010200 {
		t.Errorf("manifest header = %s %g 0x%x 0x%x", m.Version, m.ClockMHz, m.ID, m.VersionWord)
	}
	if len(m.Windows) != 4 || m.Windows[1].Name != "port0" || m.Windows[1].Line < 1 {
		t.Errorf("windows = %+v", m.Windows)
	}
	r, addr, err := m.Lookup("CAPS")
	if err != nil || addr != 0x10 || r.Line < 1 {
		t.Fatalf("CAPS = %+v 0x%x %v", r, addr, err)
	}
	if f := r.Fields[3]; f.Name != "DATAPATH_BITS" || f.Lo != 12 || f.Hi != 23 {
		t.Errorf("CAPS.DATAPATH_BITS = %+v", f)
	}
	if f := r.Fields[0]; f.Lo != 0 || f.Hi != 3 {
		t.Errorf("CAPS.INTRA_PORTS = %+v", f)
	}
	if r, _, _ := m.Lookup("ARB_MODE"); r.Fields[0].Lo != 0 || r.Fields[0].Hi != 0 {
		t.Errorf("single-bit field = %+v", r.Fields[0])
	}
	for name, want := range map[string]uint64{
		"ID": 0, "LINK_STATUS[0]": 0x200, "LINK_STATUS[1]": 0x240, "LINK_STALL_CYCLES[1]": 0x270,
		"PORT_RX_DATA[2]": 0x3800, "trace_data": 0x708, "PP_RESPONDER": 0x630,
	} {
		_, got, err := m.Lookup(name)
		if err != nil || got != want {
			t.Errorf("Lookup(%s) = 0x%x, %v; want 0x%x", name, got, err, want)
		}
	}
	for name, want := range map[string]string{
		"LINK_STATUS":     "LINK_STATUS is an array of 2: write LINK_STATUS[0] to LINK_STATUS[1]",
		"LINK_STATUS[2]":  "LINK_STATUS[2] is out of range: the array has 2 elements (0 to 1)",
		"ID[0]":           "ID is not an array: write ID",
		"LINK_STATUS[x]":  "the index must be a number",
		"LINK_STATUS[1":   "write NAME[index]",
		"SCRATCH":         `design exanet has no register "SCRATCH" (did you mean SCRATCH0?)`,
		"NO_SUCH_THING_X": `design exanet has no register "NO_SUCH_THING_X" (see the register map in`,
	} {
		if _, _, err := m.Lookup(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Lookup(%s) = %v, want %q", name, err, want)
		}
	}
	for addr, want := range map[uint64]string{0x0: "ctrl", 0xFFC: "ctrl", 0x1000: "port0", 0x2804: "port1", 0x3FFC: "port2"} {
		if w, ok := m.Window(addr); !ok || w.Name != want {
			t.Errorf("Window(0x%x) = %v %v, want %s", addr, w.Name, ok, want)
		}
	}
	for _, addr := range []uint64{0x4000, 0xFFFFFFFFFFFFFFFC, 0x10000} {
		if w, ok := m.Window(addr); ok {
			t.Errorf("Window(0x%x) = %s, want none", addr, w.Name)
		}
	}
	// Every element's address round-trips through At and Lookup.
	els := m.Elements()
	if len(els) < len(m.Registers) {
		t.Fatalf("%d elements for %d registers", len(els), len(m.Registers))
	}
	for _, e := range els {
		got, ok := m.At(e.Addr)
		if !ok || got.Name != e.Name {
			t.Errorf("At(0x%x) = %v %v, want %s", e.Addr, got.Name, ok, e.Name)
		}
		if _, a, err := m.Lookup(e.Name); err != nil || a != e.Addr {
			t.Errorf("Lookup(%s) = 0x%x %v, want 0x%x", e.Name, a, err, e.Addr)
		}
	}
	if _, ok := m.At(0x1004); ok {
		t.Error("At(0x1004) found a register inside PORT_TX_HDR's span")
	}
}

const demo = `name: demo
version: 1.0.0
parts: [xczu9eg-ffvc900-1-e]
clock_mhz: 100
id: 0x44454D4F
windows:
  - {name: ctrl, base: 0x0, size: 0x1000, access: rw}
registers:
  - {name: ID, offset: 0x0, width: 32, access: ro, reset: 0x44454D4F}
  - name: CTRL
    offset: 0x4
    width: 8
    access: rw
    reset: 0
    fields: [{name: EN, bits: "0"}, {name: MODE, bits: "3:1"}]
  - {name: STAT, offset: 0x10, count: 2, stride: 0x8, width: 32, access: ro, reset: 0, counter: {unit: packets}}
files: []
`

func TestDemoManifestIsValid(t *testing.T) {
	if _, err := ParseManifest("demo.yaml", []byte(demo)); err != nil {
		t.Fatal(err)
	}
	// Arrays may interleave (documented arrays of per-port blocks do).
	inter := strings.Replace(demo, "files: []", "  - {name: STAT2, offset: 0x14, count: 2, stride: 0x8, width: 32, access: ro, reset: 0}\nfiles: []", 1)
	if _, err := ParseManifest("demo.yaml", []byte(inter)); err != nil {
		t.Fatalf("interleaved arrays: %v", err)
	}
}

func TestBadManifests(t *testing.T) {
	cases := []struct {
		name, old, new string
		want           []string
	}{
		{"misaligned", "offset: 0x4", "offset: 0x6", []string{"demo.yaml:11: registers[1].offset: offset 0x6 is not 4-byte aligned"}},
		{"outside window", "offset: 0x10, count", "offset: 0xFFC, count", []string{"demo.yaml:16: registers[2].offset: STAT[1] at 0x1004 is outside every window"}},
		{"overlap", "offset: 0x10, count", "offset: 0x0, count", []string{"demo.yaml:16: registers[2].offset: STAT[0] at 0x0 overlaps ID"}},
		{"field beyond width", `bits: "3:1"`, `bits: "8:1"`, []string{"demo.yaml:15: registers[1].fields[1].bits: field MODE bits 8:1 lie outside the register's 8 bits"}},
		{"fields overlap", `bits: "3:1"`, `bits: "3:0"`, []string{"demo.yaml:15: registers[1].fields[1].bits: field MODE bits 3:0 overlap another field of CTRL"}},
		{"bits reversed", `bits: "3:1"`, `bits: "1:3"`, []string{`registers[1].fields[1].bits: bits "1:3" has hi below lo`}},
		{"bits garbage", `bits: "3:1"`, `bits: "x"`, []string{`registers[1].fields[1].bits: bits "x" is not "hi:lo"`}},
		{"duplicate name", "name: STAT", "name: ID", []string{"demo.yaml:16: registers[2].name: register ID is declared twice (first on line 9)"}},
		{"windows overlap", "registers:\n", "  - {name: more, base: 0x800, size: 0x1000, access: rw}\nregisters:\n", []string{"demo.yaml:8: windows[1]: window more (0x800..0x17ff) overlaps window ctrl (0x0..0xfff)"}},
		{"reset too wide", "reset: 0\n    fields", "reset: 0x100\n    fields", []string{"demo.yaml:14: registers[1].reset: reset value 0x100 does not fit 8 bits"}},
		{"width", "width: 8", "width: 33", []string{"demo.yaml:12: registers[1].width: width 33 is outside 1..32"}},
		{"access", "access: rw\n    reset", "access: rx\n    reset", []string{`demo.yaml:13: registers[1].access: access "rx" is not one of`}},
		{"unknown key", "width: 8", "widht: 8", []string{`demo.yaml:12: registers[1]: unknown key "widht"`, "did you mean width?"}},
		{"stride missing", "count: 2, stride: 0x8,", "count: 2,", []string{"demo.yaml:16: registers[2].stride: an array of 2 needs a stride"}},
		{"counter unit", "counter: {unit: packets}", "counter: {unit: furlongs, hi: NOPE}", []string{`demo.yaml:16: registers[2].counter.unit: counter unit "furlongs"`, `registers[2].counter.hi: counter's upper half "NOPE" is not a register of demo`}},
		{"file entry", "files: []", "files:\n  - {path: ../files/demo.rbf, part: 5sgxea7n2f45c2, format: bit, sha256: abc, checksum: zz}",
			[]string{`demo.yaml:18: files[0].format: format "bit" does not match the file name demo.rbf`, `demo.yaml:18: files[0].part: part "5sgxea7n2f45c2" is not one of the design's parts`, "files[0].sha256: sha256 is not 64 lower-case hex digits", `files[0].checksum: checksum "zz" is not a 32-bit number`}},
		{"header fields", "name: demo\nversion: 1.0.0\nparts: [xczu9eg-ffvc900-1-e]\nclock_mhz: 100\nid: 0x44454D4F\n", "name: Demo!\nparts: []\n",
			[]string{`demo.yaml:1: name: design name "Demo!"`, "demo.yaml:1: version: the design has no version", "demo.yaml:2: parts: the design lists no parts", "clock_mhz: the design's clock must be more than 0 MHz", "id: the design has no ID value"}},
		{"same part twice", "parts: [xczu9eg-ffvc900-1-e]", "parts: [xczu9eg-ffvc900-1-e, XCZU9EG-FFVC900-2-I]", []string{"demo.yaml:3: parts[1]: part XCZU9EG-FFVC900-2-I is the same device and package as xczu9eg-ffvc900-1-e"}},
		{"not yaml", "windows:\n", "windows:\n bad: [\n", []string{"not valid YAML"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(demo, tc.old) {
				t.Fatalf("case does not apply: %q", tc.old)
			}
			src := strings.Replace(demo, tc.old, tc.new, 1)
			_, err := ParseManifest("demo.yaml", []byte(src))
			var errs *Errors
			if !errors.As(err, &errs) {
				t.Fatalf("err = %v (%T)", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("missing %q in\n%v", w, err)
				}
			}
			for _, p := range errs.List {
				if p.File != "demo.yaml" || p.Line < 1 {
					t.Errorf("problem without position: %+v", p)
				}
			}
		})
	}
}

func TestLoadEqualsDefault(t *testing.T) {
	disk, err := Load("catalogue")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(disk.Names(), ",") != strings.Join(Default().Names(), ",") {
		t.Fatalf("Load(catalogue) designs %v, Default %v", disk.Names(), Default().Names())
	}
	for _, m := range Default().Designs() {
		dm, err := disk.Design(m.Name)
		if err != nil {
			t.Fatal(err)
		}
		if len(dm.Registers) != len(m.Registers) || len(dm.Files) != len(m.Files) {
			t.Errorf("%s differs between disk and embedded", m.Name)
		}
		for i := range m.Files {
			_, f, data, err := disk.FileFor(m.Name, m.Files[i].Part)
			if err != nil {
				t.Fatal(err)
			}
			_, ef, edata, err := Default().FileFor(m.Name, m.Files[i].Part)
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != string(edata) || f.Path != ef.Path {
				t.Errorf("%s %s: disk and embedded files differ", m.Name, f.Path)
			}
			if p := disk.FilePath(dm, f); p != filepath.Join("catalogue", "..", "files", filepath.Base(f.Path)) && p != filepath.Join("files", filepath.Base(f.Path)) {
				t.Errorf("FilePath on disk = %s", p)
			}
			if p := Default().FilePath(m, ef); p != "embedded:bitstreams/files/"+filepath.Base(f.Path) {
				t.Errorf("FilePath embedded = %s", p)
			}
		}
	}
}

func TestLoadReportsProblems(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("other.yaml", demo)
	bad := strings.Replace(strings.Replace(demo, "name: demo", "name: second", 1), "width: 8", "width: 0", 1)
	write("second.yaml", bad)
	_, err := Load(dir)
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{"other.yaml:1: name: the manifest other.yaml declares design \"demo\" (name the file after the design: demo.yaml)", "second.yaml:12: registers[1].width: width 0 is outside 1..32"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in\n%v", w, err)
		}
	}
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no manifests") {
		t.Errorf("empty dir: %v", err)
	}

	// A listed file that is missing or has another size is refused at load.
	dir = t.TempDir()
	withFile := strings.Replace(demo, "files: []", "files:\n  - {path: demo.bit, part: xczu9eg-ffvc900-1-e, format: bit, size: 10}", 1)
	if err := os.WriteFile(filepath.Join(dir, "demo.yaml"), []byte(withFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "demo.yaml:18: files: demo.bit:") {
		t.Errorf("missing file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "demo.bit"), []byte("short"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "demo.bit is 5 bytes, the manifest lists 10") {
		t.Errorf("wrong size: %v", err)
	}
}

func TestDesignLookupErrors(t *testing.T) {
	c := Default()
	if _, err := c.Design("exanett"); err == nil || !strings.Contains(err.Error(), "did you mean exanet?") {
		t.Errorf("Design(exanett) = %v", err)
	}
	if _, _, _, err := c.FileFor("exanet", "xczu3eg-sbva484-1-e"); err == nil || !strings.Contains(err.Error(), "design exanet has no bitstream for part xczu3eg-sbva484-1-e (files are built for xczu9eg-ffvc900-1-e, xczu9eg-ffvb1156-2-e)") {
		t.Errorf("FileFor(ultra96 part) = %v", err)
	}
	ds := c.Designs()
	for i := 1; i < len(ds); i++ {
		if ds[i-1].Name >= ds[i].Name {
			t.Errorf("Designs not sorted: %s before %s", ds[i-1].Name, ds[i].Name)
		}
	}
}

func BenchmarkLookup(b *testing.B) {
	m, _ := Default().Design("exanet")
	for b.Loop() {
		if _, _, err := m.Lookup("PORT_RX_DATA[2]"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseManifest(b *testing.B) {
	data, err := os.ReadFile("catalogue/exanet.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseManifest("exanet.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

// A manifest's declared configuration values: each names a register (or
// field, or whole array) of the map that can hold it, says where it comes
// from, explains a value that is not the paper's, and agrees with params.
func TestManifestConfig(t *testing.T) {
	good := strings.Replace(demo, "files: []", `params: {mode: "5"}
config:
  - {name: mode, register: CTRL.MODE, value: 5, paper: 5, source: "Demo §1"}
  - {name: stat, register: STAT, value: 0, source: "Demo §2"}
  - {name: en, register: CTRL.EN, value: 1, paper: 0, source: "Demo §3", deviation: "this build enables it"}
files: []`, 1)
	m, err := ParseManifest("demo.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := m.Declared("mode"); err != nil || c.Value != 5 || c.Line == 0 {
		t.Errorf("Declared(mode) = %+v, %v", c, err)
	}
	if _, err := m.Declared("nope"); err == nil || !strings.Contains(err.Error(), "declares no configuration value") {
		t.Errorf("Declared(nope): %v", err)
	}
	if names, field, err := m.ConfigRegisters("STAT"); err != nil || len(names) != 2 || names[1] != "STAT[1]" || field != "" {
		t.Errorf("ConfigRegisters(STAT) = %v %q %v", names, field, err)
	}
	if names, field, err := m.ConfigRegisters("CTRL.MODE"); err != nil || len(names) != 1 || field != "MODE" {
		t.Errorf("ConfigRegisters(CTRL.MODE) = %v %q %v", names, field, err)
	}
	for _, tc := range []struct{ old, new, want string }{
		{"register: CTRL.MODE, value: 5", "register: CTRL.MODE, value: 9", "does not fit the 3 bits of CTRL.MODE"},
		{"register: CTRL.MODE", "register: CTRL.NOPE", "register CTRL has no field NOPE"},
		{"register: STAT,", "register: NOPE,", `no register "NOPE"`},
		{`source: "Demo §2"`, `source: ""`, "configuration value stat has no source"},
		{`, deviation: "this build enables it"`, "", "en is declared 1, the paper says 0"},
		{"{name: stat,", "{name: mode,", "configuration value mode is declared twice"},
		{`params: {mode: "5"}`, `params: {mode: "4"}`, `mode is declared 5 here and "4" under params`},
		{"value: 0, source", "value: 0.5, source", "is not a whole number of register units"},
	} {
		src := strings.Replace(good, tc.old, tc.new, 1)
		if src == good {
			t.Fatalf("case does not apply: %q", tc.old)
		}
		_, err := ParseManifest("demo.yaml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "demo.yaml:") {
			t.Errorf("%s -> %s: %v, want %q", tc.old, tc.new, err, tc.want)
		}
	}
}
