package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/bitstreams"
)

// copyCatalogue copies the repository's manifests (with their files: lists
// blanked when blank is set) into a fresh bitstreams-like directory.
func copyCatalogue(t *testing.T, blank bool) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "catalogue"), 0o755); err != nil {
		t.Fatal(err)
	}
	ms, _ := filepath.Glob("../../catalogue/*.yaml")
	if len(ms) == 0 {
		t.Fatal("no manifests in ../../catalogue")
	}
	for _, m := range ms {
		data, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if blank {
			data, err = rewriteFiles(data, nil)
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "catalogue", filepath.Base(m)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCommittedFilesAreWhatTheGeneratorWrites regenerates the catalogue from
// scratch and compares every file and manifest with the committed ones: a
// generator change, or a manifest change without a re-run, fails here.
func TestCommittedFilesAreWhatTheGeneratorWrites(t *testing.T) {
	dir := copyCatalogue(t, true)
	if _, err := generate(dir); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"catalogue", "files"} {
		gen, _ := filepath.Glob(filepath.Join(dir, sub, "*"))
		repo, _ := filepath.Glob(filepath.Join("../..", sub, "*"))
		var repoNames []string
		for _, r := range repo {
			if filepath.Base(r) != Readme {
				repoNames = append(repoNames, filepath.Base(r))
			}
		}
		var genNames []string
		for _, g := range gen {
			genNames = append(genNames, filepath.Base(g))
			want, err := os.ReadFile(g)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join("../..", sub, filepath.Base(g)))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("bitstreams/%s/%s is not what the generator writes: run go generate ./bitstreams/...", sub, filepath.Base(g))
			}
		}
		if strings.Join(genNames, ",") != strings.Join(repoNames, ",") {
			t.Errorf("bitstreams/%s holds %v, the generator writes %v", sub, repoNames, genNames)
		}
	}
}

func TestSecondRunChangesNothing(t *testing.T) {
	dir := copyCatalogue(t, false)
	if _, err := generate(dir); err != nil {
		t.Fatal(err)
	}
	changed, err := generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) != 0 {
		t.Errorf("second run changed %v", changed)
	}
}

// A design added later (an Intel part, a manifest asking for .bin as well,
// no files: key at all) needs only its manifest and a re-run.
func TestNewDesignsNeedOnlyAManifest(t *testing.T) {
	dir := t.TempDir()
	cat := filepath.Join(dir, "catalogue")
	files := filepath.Join(dir, "files")
	for _, d := range []string{cat, files} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	shoal := `name: shoal
version: 0.3.0
parts: [5sgxea7n2f45c2]
clock_mhz: 156.25
id: 0x53484F4C
files: []
windows:
  - {name: ctrl, base: 0, size: 0x1000, access: rw}
# a comment that must survive
registers:
  - {name: ID, offset: 0, width: 32, access: ro, reset: 0x53484F4C}
`
	tin := `name: tin
version: 2.0.0
parts: [xczu9eg-ffvb1156-2-e]
formats: [bit, bin]
clock_mhz: 250
id: 0x54494E21
windows:
  - {name: ctrl, base: 0, size: 0x1000, access: rw}
registers:
  - {name: ID, offset: 0, width: 32, access: ro, reset: 0x54494E21}`
	for n, s := range map[string]string{"shoal.yaml": shoal, "tin.yaml": tin} {
		if err := os.WriteFile(filepath.Join(cat, n), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(files, "old_design.bit"), []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, err := generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(changed, "\n"), "removed "+filepath.Join(files, "old_design.bit")) {
		t.Errorf("stale file not removed: %v", changed)
	}
	for _, want := range []string{"shoal_5sgxea7n2f45c2.rbf", "shoal_5sgxea7n2f45c2.sof", "tin_xczu9eg-ffvb1156-2-e.bit", "tin_xczu9eg-ffvb1156-2-e.bin"} {
		if _, err := os.Stat(filepath.Join(files, want)); err != nil {
			t.Errorf("not generated: %v", err)
		}
	}
	got, _ := os.ReadFile(filepath.Join(cat, "shoal.yaml"))
	// Every line but the files: list is as it was.
	wantLines := strings.Split(shoal, "\n")
	gotLines := strings.Split(string(got), "\n")
	// An Intel part gets a .sof (quartus_pgm over JTAG) and an .rbf.
	if len(gotLines) != len(wantLines)+2 || gotLines[5] != "files: "+filesComment ||
		!strings.Contains(gotLines[6], `format: sof`) || !strings.Contains(gotLines[6], `checksum: "0x`) || !strings.Contains(gotLines[7], `format: rbf`) {
		t.Fatalf("shoal.yaml rewritten as\n%s", got)
	}
	if strings.Join(append(gotLines[:5:5], gotLines[8:]...), "\n") != strings.Join(append(wantLines[:5:5], wantLines[6:]...), "\n") {
		t.Errorf("lines outside files: changed:\n%s", got)
	}
	c, err := bitstreams.Load(cat)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ design, part string }{{"shoal", "5SGXEA7N2F45C2N"}, {"tin", "xczu9eg-ffvb1156-1-i"}} {
		m, err := c.Design(tc.design)
		if err != nil {
			t.Fatal(err)
		}
		for i := range m.Files {
			f := &m.Files[i]
			data, err := os.ReadFile(c.FilePath(m, f))
			if err != nil {
				t.Fatal(err)
			}
			img, err := c.Check(m, c.FilePath(m, f), data, tc.part)
			if err != nil {
				t.Errorf("%s: %v", f.Path, err)
			}
			if f.Format == "bit" {
				info, _ := bitstreams.Parse(f.Path, data)
				if info.Design != tc.design+"_top" || info.IDCODE != 0x04738093 || len(img.Bin) != info.PayloadLen {
					t.Errorf("%s: %+v", f.Path, info)
				}
			}
		}
	}
	// The .bin is the .bit converted.
	bit, _ := os.ReadFile(filepath.Join(files, "tin_xczu9eg-ffvb1156-2-e.bit"))
	bin, _ := os.ReadFile(filepath.Join(files, "tin_xczu9eg-ffvb1156-2-e.bin"))
	if conv, err := bitstreams.ToBin(bit); err != nil || !bytes.Equal(conv, bin) {
		t.Errorf("tin .bin is not ToBin(.bit): %v", err)
	}
	if changed, err := generate(dir); err != nil || len(changed) != 0 {
		t.Errorf("second run: %v %v", changed, err)
	}
}

func TestBrokenManifestStopsTheGenerator(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "catalogue"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "catalogue", "x.yaml"), []byte("name: x\nversion: 1\nparts: [xczu9eg-ffvc900-1-e]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := generate(dir); err == nil || !strings.Contains(err.Error(), "x.yaml:1: clock_mhz") {
		t.Errorf("err = %v", err)
	}
}

func TestFilesAreDeterministicAndDistinct(t *testing.T) {
	m := &bitstreams.Manifest{Name: "d", Version: "1", ID: 1, VersionWord: 2}
	a, _ := synth(m, "xczu9eg-ffvc900-1-e", "bit")
	b, _ := synth(m, "xczu9eg-ffvc900-1-e", "bit")
	c, _ := synth(m, "xczu9eg-ffvb1156-2-e", "bit")
	if !bytes.Equal(a, b) || bytes.Equal(a, c) {
		t.Error("same inputs must give the same file, different parts different files")
	}
	if len(a) < 4096 || len(a) > 8192 {
		t.Errorf("file of %d bytes, want a few KiB", len(a))
	}
	if _, err := synth(m, "x", "mcs"); err == nil {
		t.Error("mcs generated")
	}
	// The .sof stand-in is labelled (never mistaken for an .rbf) and
	// carries the .rbf's configuration data.
	sf, err := synth(m, "5sgxea7n2f45c2", "sof")
	rb, _ := synth(m, "5sgxea7n2f45c2", "rbf")
	if err != nil || !bytes.HasPrefix(sf, []byte(bitstreams.SOFMagic)) || !bytes.HasSuffix(sf, rb) {
		t.Errorf("sof: %v", err)
	}
	if _, err := bitstreams.Parse("x.rbf", sf); err == nil || !strings.Contains(err.Error(), "name it .sof") {
		t.Errorf("a .sof named .rbf: %v", err)
	}
}
