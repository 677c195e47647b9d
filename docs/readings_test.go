package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// readings.md and the code that follows it stay joined: code comments cite a
// reading by its number ("reading S2, Shoal §3.3.2"), so every number the code
// cites must be one readings.md records, every reading recorded must be cited
// by the code it shapes, and every path a reading names must be there.

var (
	// readingHeading is a reading's heading: "### S2 — title (§3.3.2)".
	readingHeading = regexp.MustCompile(`(?m)^### ([A-Z][0-9]+) `)
	// readingCite is a citation in code: "reading A40", "readings E1 and E2",
	// "Readings S40, S62".
	readingCite = regexp.MustCompile(`\b[Rr]eadings? ([A-Z][0-9]+(?:(?:, | and | or |/)[A-Z][0-9]+)*)`)
	readingID   = regexp.MustCompile(`[A-Z][0-9]+`)
	// readingPath is a path a reading names in backquotes.
	readingPath = regexp.MustCompile("`((?:boards|golden|selftest|traffic|drivers|results|labrun|labconfig|bitstreams|internal|workload)/[A-Za-z0-9_./-]+)`")
)

// citedReadings returns the readings a line cites.
func citedReadings(line string) []string {
	var out []string
	for _, m := range readingCite.FindAllStringSubmatch(line, -1) {
		out = append(out, readingID.FindAllString(m[1], -1)...)
	}
	return out
}

func TestReadingsAreRecordedAndCited(t *testing.T) {
	doc, err := os.ReadFile("readings.md")
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	for _, m := range readingHeading.FindAllStringSubmatch(string(doc), -1) {
		if recorded[m[1]] {
			t.Errorf("readings.md records %s twice: a number is never reused", m[1])
		}
		recorded[m[1]] = true
	}
	if len(recorded) < 20 {
		t.Fatalf("readings.md records only %d readings: the headings are not read right", len(recorded))
	}
	for _, m := range readingPath.FindAllStringSubmatch(string(doc), -1) {
		if _, err := os.Stat(filepath.Join("..", filepath.FromSlash(m[1]))); err != nil {
			t.Errorf("readings.md names %s, which is not in the repository: name the code the reading shapes now", m[1])
		}
	}
	cited := map[string][]string{} // reading -> where the code cites it
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || filepath.Base(path) == "readings_test.go" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			for _, r := range citedReadings(line) {
				cited[r] = append(cited[r], filepath.ToSlash(path[len("../"):])+":"+strconv.Itoa(i+1))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for r := range cited {
		ids = append(ids, r)
	}
	sort.Strings(ids)
	for _, r := range ids {
		if !recorded[r] {
			t.Errorf("%s cites reading %s, which docs/readings.md does not record", strings.Join(cited[r], ", "), r)
		}
	}
	var all []string
	for r := range recorded {
		all = append(all, r)
	}
	sort.Strings(all)
	for _, r := range all {
		if len(cited[r]) == 0 {
			t.Errorf("reading %s is cited by no code: cite it (\"reading %s, <paper> §N\") where the code it shapes follows it", r, r)
		}
	}
}

func TestCitedReadings(t *testing.T) {
	for line, want := range map[string][]string{
		"// reading S2, Shoal §3.3.2":                    {"S2"},
		"(readings E1 and E2: the peak is the bus)":      {"E1", "E2"},
		"Readings S40, S62 and O61 shape it":             {"S40", "S62", "O61"},
		"reading A40/A20 of Aquila":                      {"A40", "A20"},
		"// the reading ruled out: 6.4 ns fabric cycles": nil,
		"a reading E of the bus":                         nil,
	} {
		if got := citedReadings(line); !slices.Equal(got, want) {
			t.Errorf("%q cites %v, want %v", line, got, want)
		}
	}
}
