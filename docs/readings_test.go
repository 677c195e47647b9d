package docs

import (
	"fmt"
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

// Every reading is recorded whole: a heading that ends with the section of
// the paper it concerns in parentheses, then its four parts in this order.
var readingParts = []struct{ name, what string }{
	{"Question", "what the paper leaves open, quoting it where that helps"},
	{"Reading", "what labrunner does"},
	{"Reasons", "why, from the paper's text and numbers"},
	{"Shapes", "the code and tests it shapes, emulator and golden both where both follow it"},
}

var (
	// readingSection is the section a heading ends with: "(§3.3.2)",
	// "(§IV-D)", "(App. A)", "(Shoal §3.4; Aquila Appendix B)".
	readingSection = regexp.MustCompile(`\([^()]*(?:§|\bApp\. |\bAppendix )[^()]*\)\s*$`)
	// readingPart opens a part: "- **Question.** text".
	readingPart = regexp.MustCompile(`^- \*\*([^*]+?)\.\*\*[ \t]*(.*)$`)
)

// readingProblems returns what each reading of doc lacks: a section in its
// heading, or one of the four parts (missing, empty, twice, out of order).
func readingProblems(doc string) []string {
	type part struct {
		name string
		text string
	}
	type record struct {
		id, heading string
		parts       []part
	}
	var all []*record
	var cur *record
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "### "):
			cur = &record{heading: strings.TrimSpace(line[4:])}
			if m := readingHeading.FindStringSubmatch(line); m != nil {
				cur.id = m[1]
			} else {
				cur.id = cur.heading
			}
			all = append(all, cur)
		case strings.HasPrefix(line, "## ") || strings.HasPrefix(line, "# ") || strings.TrimSpace(line) == "---":
			cur = nil
		case cur == nil:
		case readingPart.MatchString(line):
			m := readingPart.FindStringSubmatch(line)
			cur.parts = append(cur.parts, part{m[1], strings.TrimSpace(m[2])})
		case strings.HasPrefix(line, "  ") && len(cur.parts) > 0:
			p := &cur.parts[len(cur.parts)-1]
			p.text = strings.TrimSpace(p.text + " " + strings.TrimSpace(line))
		}
	}
	var out []string
	for _, r := range all {
		if !readingSection.MatchString(r.heading) {
			out = append(out, fmt.Sprintf("reading %s: its heading %q names no section of the paper: end it with the section in parentheses, e.g. \"(§3.3)\", \"(App. A)\", \"(§IV-B)\"", r.id, r.heading))
		}
		last, lastName := -1, "" // where the part checked before this one is
		for _, want := range readingParts {
			n := 0
			for j, p := range r.parts {
				if p.name != want.name {
					continue
				}
				n++
				if n > 1 {
					continue
				}
				if p.text == "" {
					out = append(out, fmt.Sprintf("reading %s: its **%s.** part is empty: say %s", r.id, want.name, want.what))
				}
				if j < last {
					out = append(out, fmt.Sprintf("reading %s: its **%s.** part comes before its **%s.** part: keep the order Question, Reading, Reasons, Shapes", r.id, want.name, lastName))
				}
				last, lastName = j, p.name
			}
			switch {
			case n == 0:
				out = append(out, fmt.Sprintf("reading %s lacks its **%s.** part: say %s", r.id, want.name, want.what))
			case n > 1:
				out = append(out, fmt.Sprintf("reading %s has %d **%s.** parts: give it one", r.id, n, want.name))
			}
		}
	}
	return out
}

// TestEveryReadingIsComplete holds readings.md to the form of a reading:
// every heading names its section, every reading has its four parts.
func TestEveryReadingIsComplete(t *testing.T) {
	doc, err := os.ReadFile("readings.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(readingHeading.FindAllString(string(doc), -1)); n < 20 {
		t.Fatalf("readings.md records only %d readings: the headings are not read right", n)
	}
	for _, p := range readingProblems(string(doc)) {
		t.Error(p)
	}
}

// A small readings page that is complete passes; the same page with one
// part of one reading taken away, emptied, doubled or moved, or with the
// section taken out of a heading, fails with one message that names the
// reading and what it lacks.
func TestReadingProblemsCatchEachMissingPart(t *testing.T) {
	const complete = `# Readings

## A paper (Venue 2020)

### X1 — One question (§3.3)

- **Question.** Is it this or that?
- **Reading.** This.
- **Reasons.** §3.3 says "this"; that would give
  a figure the paper does not show.
- **Shapes.** ` + "`golden/x`" + `; ` + "`boards/emu/x`" + `.

### X2 — Another question (Shoal §3.4; Aquila App. B)

- **Question.** Which one?
- **Reading.** The first.
- **Reasons.** Because.
- **Consequence.** Something follows.
- **Shapes.** ` + "`golden/y`" + `.

---

## Number ranges
`
	if ps := readingProblems(complete); len(ps) != 0 {
		t.Fatalf("the complete page fails: %v", ps)
	}
	for _, c := range []struct {
		name, old, new string
		want           []string
	}{
		{"no Question", "- **Question.** Is it this or that?\n", "", []string{"reading X1 lacks its **Question.** part"}},
		{"no Reading", "- **Reading.** This.\n", "", []string{"reading X1 lacks its **Reading.** part"}},
		{"no Reasons", "- **Reasons.** §3.3 says \"this\"; that would give\n  a figure the paper does not show.\n", "", []string{"reading X1 lacks its **Reasons.** part"}},
		{"no Shapes", "- **Shapes.** `golden/y`.\n", "", []string{"reading X2 lacks its **Shapes.** part"}},
		{"empty Question", "- **Question.** Which one?", "- **Question.**", []string{"reading X2: its **Question.** part is empty"}},
		{"two Readings", "- **Reading.** The first.\n", "- **Reading.** The first.\n- **Reading.** The second.\n", []string{"reading X2 has 2 **Reading.** parts"}},
		{"Reasons before Reading", "- **Reading.** This.\n- **Reasons.** §3.3 says \"this\"; that would give\n  a figure the paper does not show.\n", "- **Reasons.** §3.3 says \"this\"; that would give\n  a figure the paper does not show.\n- **Reading.** This.\n", []string{"reading X1: its **Reasons.** part comes before its **Reading.** part"}},
		{"Reading before Question", "- **Question.** Which one?\n- **Reading.** The first.\n", "- **Reading.** The first.\n- **Question.** Which one?\n", []string{"reading X2: its **Reading.** part comes before its **Question.** part"}},
		{"no section", "### X1 — One question (§3.3)", "### X1 — One question", []string{"reading X1: its heading \"X1 — One question\" names no section"}},
		{"a section outside the parentheses", "### X1 — One question (§3.3)", "### X1 — The question of §3.3", []string{"reading X1: its heading", "names no section"}},
		{"a figure, no section", "### X1 — One question (§3.3)", "### X1 — One question (Fig. 9)", []string{"reading X1: its heading", "names no section"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(complete, c.old) {
				t.Fatalf("the page has no %q to change", c.old)
			}
			got := readingProblems(strings.Replace(complete, c.old, c.new, 1))
			if len(got) != 1 {
				t.Fatalf("got %d problems, want 1: %q", len(got), got)
			}
			for _, w := range c.want {
				if !strings.Contains(got[0], w) {
					t.Errorf("%q does not say %q", got[0], w)
				}
			}
		})
	}
}
