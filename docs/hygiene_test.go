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
// machine), and no comment, message or page speaks of the process that
// shaped it (who decided, which issue, a closing note). Where a paper is
// open, the reading is cited by its number in readings.md instead.

// hygieneRule is one thing the repository must not say, and why.
type hygieneRule struct {
	re  *regexp.Regexp
	why string
}

var hygieneRules = []hygieneRule{
	{regexp.MustCompile(`DESIGN\.md`), "points to a design document outside the repository: say it in docs/architecture.md and link that"},
	{regexp.MustCompile(`\.\./shared|\bshared/`), "points to a folder outside the repository: cite a paper by title, venue and section"},
	{regexp.MustCompile(`/work/`), "names a path on one machine"},
	{regexp.MustCompile(`(?i)\brulings?\b`), "speaks of who decided: record the reading in docs/readings.md and cite it by number"},
	{regexp.MustCompile(`(?i)\bissue\s*#?\s*[0-9]`), "speaks of an issue: say what the code does and why"},
	{regexp.MustCompile(`(?i)\b(the|an|this|that)\s+issue\b|\bissue's\b`), "speaks of an issue: say what the code does and why"},
	{regexp.MustCompile(`(?i)\bclosing notes?\b`), "speaks of the process that made the code"},
	{regexp.MustCompile(`(?i)\bthe lead\b|\blead's\b`), "speaks of who decided: record the reading in docs/readings.md and cite it by number"},
}

// hygieneWords are lower-case words one of which a line breaking a rule
// holds: most lines are passed over without running the rules.
var hygieneWords = []string{"design.md", "shared", "/work/", "ruling", "issue", "closing note", "lead"}

// hygieneProblems returns what rules line breaks, and why.
func hygieneProblems(line string) []string {
	lower := strings.ToLower(line)
	if !slices.ContainsFunc(hygieneWords, func(w string) bool { return strings.Contains(lower, w) }) {
		return nil
	}
	var out []string
	for _, r := range hygieneRules {
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
// repository (this one aside: it spells out what it looks for).
func TestNothingPointsOutsideOrSpeaksOfProcess(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	self := filepath.Join("docs", "hygiene_test.go")
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
			for _, p := range hygieneProblems(sc.Text()) {
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
	for _, bad := range []string{
		"see ../shared/DESIGN.md",
		"// the lead's ruling 4",
		"papers in /work/shared/seeds/",
		"// issue 12: the console waits",
		"fixed for issue #7",
		"// The small Clique of the issue",
		"the issue's benchmark",
		"make figures (closing notes)",
		"as the lead decided",
	} {
		if len(hygieneProblems(bad)) == 0 {
			t.Errorf("%q passes the rules", bad)
		}
	}
	for _, good := range []string{
		"docs/adding-a-design.md",
		"// The reading ruled out: the same words in 6.4 ns",
		"packets in CTS issue order",
		`"ARM must issue a write for every single word"`,
		"return r.Shared(key, f).(*fabric)",
		"leadership; pairs, lead := pairsOf(flows)",
		"a shared lock directory, /tmp/labrunner-locks",
	} {
		if p := hygieneProblems(good); len(p) != 0 {
			t.Errorf("%q is refused: %v", good, p)
		}
	}
}
