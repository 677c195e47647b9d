package docs

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The repository speaks for itself: nothing in it points to a place outside
// it (a design document next to the checkout, a folder or a path on one
// machine), and no comment, message or page speaks of how it came to be
// written rather than of what it does. Where a paper is open, the reading
// is cited by its number in readings.md instead. What is refused, and why,
// is data: testdata/hygiene.txt.

// hygieneFile holds the rules, with lines they must and must not refuse; the
// walk leaves it out, as it spells out what is looked for.
const hygieneFile = "testdata/hygiene.txt"

// hygieneRule is one thing the repository must not say, and why.
type hygieneRule struct {
	re  *regexp.Regexp
	why string
}

// hygiene is hygieneFile, parsed.
type hygiene struct {
	// words are lower-case words one of which a line breaking a rule holds:
	// most lines are passed over without running the rules.
	words     []string
	rules     []hygieneRule
	bad, good []string
}

func loadHygiene(t *testing.T) *hygiene {
	t.Helper()
	data, err := os.ReadFile(hygieneFile)
	if err != nil {
		t.Fatal(err)
	}
	h := &hygiene{}
	for n, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		switch {
		case f[0] == "words":
			h.words = append(h.words, f[1:]...)
		case f[0] == "rule" && len(f) == 3:
			re, err := regexp.Compile(f[1])
			if err != nil {
				t.Fatalf("%s:%d: %v", hygieneFile, n+1, err)
			}
			h.rules = append(h.rules, hygieneRule{re, f[2]})
		case f[0] == "bad" && len(f) == 2:
			h.bad = append(h.bad, f[1])
		case f[0] == "good" && len(f) == 2:
			h.good = append(h.good, f[1])
		default:
			t.Fatalf("%s:%d: want words, rule, bad or good and tab-separated fields: %q", hygieneFile, n+1, line)
		}
	}
	if len(h.words) == 0 || len(h.rules) == 0 || len(h.bad) == 0 || len(h.good) == 0 {
		t.Fatalf("%s: %d words, %d rules, %d bad and %d good lines: each needs one at least", hygieneFile, len(h.words), len(h.rules), len(h.bad), len(h.good))
	}
	return h
}

// problems returns what rules line breaks, and why.
func (h *hygiene) problems(line string) []string {
	lower := strings.ToLower(line)
	if !slices.ContainsFunc(h.words, func(w string) bool { return strings.Contains(lower, w) }) {
		return nil
	}
	var out []string
	for _, r := range h.rules {
		if m := r.re.FindString(line); m != "" {
			out = append(out, "says "+`"`+m+`"`+": "+r.why)
		}
	}
	return out
}

// hygieneSkip says which folders below the module root are not the
// repository's text: version control, caches and build output, run
// directories `labrunner nightly` writes by default.
func hygieneSkip(rel string, d fs.DirEntry) bool {
	if !d.IsDir() || rel == "." {
		return false
	}
	return strings.HasPrefix(d.Name(), ".") || rel == "bin" || rel == "runs"
}

// TestNothingPointsOutsideOrSpeaksOfProcess reads every text file of the
// repository (hygieneFile aside).
func TestNothingPointsOutsideOrSpeaksOfProcess(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	h := loadHygiene(t)
	self := filepath.Join("docs", filepath.FromSlash(hygieneFile))
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if hygieneSkip(rel, d) {
			return filepath.SkipDir
		}
		if d.IsDir() || !d.Type().IsRegular() || rel == self || d.Name() == ".git" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.IndexByte(data[:min(len(data), 8192)], 0) >= 0 {
			return nil // not text: a built binary, an image
		}
		files++
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, len(data)+1)
		for n := 1; sc.Scan(); n++ {
			for _, p := range h.problems(sc.Text()) {
				t.Errorf("%s:%d %s", filepath.ToSlash(rel), n, p)
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read only %d files below %s: the walk is not looking at this repository", files, root)
	}
}

// The rules catch what they are for, and leave alone the words the code
// uses in other senses.
func TestHygieneRules(t *testing.T) {
	h := loadHygiene(t)
	for _, bad := range h.bad {
		if len(h.problems(bad)) == 0 {
			t.Errorf("%q passes the rules", bad)
		}
	}
	for _, good := range h.good {
		if p := h.problems(good); len(p) != 0 {
			t.Errorf("%q is refused: %v", good, p)
		}
	}
}
