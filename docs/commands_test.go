package docs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/labrunner/labrunner/internal/raceshare"
	"github.com/labrunner/labrunner/results/influx/influxtest"
)

// The shell blocks (```sh) of README.md and of every docs/*.md page are
// commands a user will type: this test runs each of them, in order, against
// the embedded emulated rack, with the exit code the page documents.
//
// The conventions a page follows:
//
//   - A command's trailing comment may say "(exit N)": the exit code it must
//     end with; otherwise 0.
//   - A command whose comment says "Ctrl-C" keeps running: it is stopped with
//     SIGINT once it has printed something, and must then exit 0.
//   - `go run ./cmd/labrunner` and a bare `labrunner` run the binary built from
//     this tree; `make test` is this suite itself and is not run again.
//   - Upper-case placeholders stand for what an earlier command made:
//     RUN_DIR and RUN_B the last run directory a command printed, RUN_A the one
//     before it.
//   - A page may put `<!-- doctest: KEY[=VALUE] ... -->` right above a block:
//     `lab=PATH` runs the block's commands with LABRUNNER_LAB=PATH (a smaller
//     rack than the default; the commands themselves are unchanged);
//     `influx` starts a real InfluxDB (user labrunner, password secret,
//     databases nightly and labrunner), points the page's
//     http://influx:8086 at it, puts its token in ~/.influx-token, and
//     checks that points arrived; `checked-by=TestX` says the block is host
//     setup that cannot run in a sandbox (sudo, systemctl) and names the test
//     that checks what it relies on instead, which must exist; `default-run`
//     says the block's one nightly is the default lab's whole run, whose
//     report and bands checkDefaultRun holds to account; `campaign-run` that
//     the block's one command is a fault campaign, whose outcomes
//     checkCampaignRun holds to what the page says of them.
//
// Commands of one page share a scratch directory (a file one command writes,
// the next may read), with the repository's bitstreams/ and docs/ linked in.

type command struct {
	file   string
	line   int
	text   string // the command as the page shows it (continuations joined)
	exit   int
	sigint bool
}

type block struct {
	file      string
	line      int
	directive map[string]string
	cmds      []command
}

var (
	fenceRE     = regexp.MustCompile("^```(\\w*)\\s*$")
	directiveRE = regexp.MustCompile(`^<!--\s*doctest:(.*)-->\s*$`)
	exitRE      = regexp.MustCompile(`\(exit (\d)\)`)
)

// shellBlocks returns the sh blocks of a markdown file.
func shellBlocks(path string) ([]block, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []block
	lines := strings.Split(string(data), "\n")
	var pending map[string]string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := directiveRE.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			pending = map[string]string{}
			for _, f := range strings.Fields(m[1]) {
				k, v, _ := strings.Cut(f, "=")
				pending[k] = v
			}
			continue
		}
		m := fenceRE.FindStringSubmatch(l)
		if m == nil {
			if strings.TrimSpace(l) != "" {
				pending = nil
			}
			continue
		}
		lang := m[1]
		start := i + 1
		j := start
		for j < len(lines) && !strings.HasPrefix(lines[j], "```") {
			j++
		}
		if lang == "sh" {
			b := block{file: path, line: start, directive: pending}
			b.cmds = parseCommands(path, start, lines[start:j])
			out = append(out, b)
		}
		pending = nil
		i = j
	}
	return out, nil
}

func parseCommands(file string, first int, lines []string) []command {
	var out []command
	var cur strings.Builder
	curLine := 0
	for k, l := range lines {
		t := strings.TrimSpace(l)
		if cur.Len() == 0 {
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			curLine = first + k + 1
		}
		if strings.HasSuffix(t, "\\") {
			cur.WriteString(strings.TrimSuffix(t, "\\"))
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(t)
		text := cur.String()
		cur.Reset()
		c := command{file: file, line: curLine, text: text}
		if _, comment, ok := cutComment(text); ok {
			if m := exitRE.FindStringSubmatch(comment); m != nil {
				c.exit, _ = strconv.Atoi(m[1])
			}
			c.sigint = strings.Contains(comment, "Ctrl-C")
		}
		out = append(out, c)
	}
	return out
}

// cutComment splits a shell line at its first # outside quotes that starts
// a word.
func cutComment(s string) (cmd, comment string, ok bool) {
	var q byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q != 0:
			if c == q {
				q = 0
			}
		case c == '\'' || c == '"':
			q = c
		case c == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return strings.TrimSpace(s[:i]), s[i+1:], true
		}
	}
	return strings.TrimSpace(s), "", false
}

// documents lists the pages whose commands run.
func documents(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../README.md"}, pages...)
}

func TestParseCommands(t *testing.T) {
	cs := parseCommands("x.md", 10, []string{
		"# a comment line",
		"labrunner lab default > mylab.yaml   # the lab (exit 0)",
		"",
		"labrunner nightly --plan exanet \\",
		"  --fault credit-leak@exa-10:sfp0   # caught (exit 1)",
		"labrunner console --expect 'a # b' # keeps running: Ctrl-C stops it",
	})
	if len(cs) != 3 {
		t.Fatalf("%d commands: %+v", len(cs), cs)
	}
	if cs[0].line != 12 || cs[0].exit != 0 || cs[1].exit != 1 || cs[1].line != 14 || !cs[2].sigint {
		t.Errorf("parsed %+v", cs)
	}
	if c, _, _ := cutComment(cs[2].text); c != "labrunner console --expect 'a # b'" {
		t.Errorf("comment cut inside quotes: %q", c)
	}
}

// buildOnce builds the labrunner binary of this tree once per test binary.
var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

func labrunnerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "labrunner-doctest-bin-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, "labrunner"), "../cmd/labrunner")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/labrunner: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

var runDirRE = regexp.MustCompile(`(?m)run directory: (\S+)`)

// page is the state a page's commands share.
type page struct {
	t       *testing.T
	dir     string // scratch working directory
	bin     string
	runDirs []string
	env     []string
	// Set per block by its directive.
	blockEnv []string
	influx   *influxtest.Server
}

func newPage(t *testing.T, bin string) *page {
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := scratchDir(t, repo)
	// The page's commands run "from the clone": every top-level entry of
	// the repository is linked in, but what a run writes (runs/, bin/,
	// mylab.yaml) stays in the scratch directory.
	entries, err := os.ReadDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch e.Name() {
		case ".git", ".cache", "bin", "runs":
			continue
		}
		if err := os.Symlink(filepath.Join(repo, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	// The user's Go caches stay (a `go install` must not download the
	// world again); binaries installed by a page go to its scratch bin.
	env := os.Environ()
	for _, k := range []string{"GOPATH", "GOCACHE", "GOMODCACHE"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", k, err)
		}
		env = append(env, k+"="+strings.TrimSpace(string(out)))
	}
	env = append(env, "PATH="+bin+string(os.PathListSeparator)+filepath.Join(dir, "gobin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GOBIN="+filepath.Join(dir, "gobin"), "HOME="+dir, "CI=true", "LABRUNNER_LOCKS="+filepath.Join(dir, "locks"))
	return &page{t: t, dir: dir, bin: bin, env: env}
}

// scratchDir is the page's scratch directory, empty: the same path every
// run (under the clone's ignored .cache), because what a page builds (make
// install, make figures' test binaries) is compiled from it and Go's build
// cache keys a package by its directory: in a new temporary directory each
// run, every run compiled the module again (a fifth of this test's CPU).
// A lock keeps two runs of this test in one clone from sharing it.
func scratchDir(t *testing.T, repo string) string {
	t.Helper()
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	dir := filepath.Join(repo, ".cache", "doctest", name)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	clean := func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("clearing the scratch directory: %v", err)
		}
	}
	clean()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		clean()
		lock.Close() // drops the flock
	})
	return dir
}

// expand turns a page's command into the one to run: placeholders filled,
// `go run ./cmd/labrunner` the built binary.
func (p *page) expand(c command) (string, error) {
	s, _, _ := cutComment(c.text)
	s = strings.ReplaceAll(s, "go run ./cmd/labrunner", "labrunner")
	if p.influx != nil {
		s = strings.ReplaceAll(s, "http://influx:8086", p.influx.URL)
	}
	last := func(back int) (string, error) {
		if len(p.runDirs) < back {
			return "", fmt.Errorf("%s:%d: %q needs %d earlier run directories on this page, there are %d", c.file, c.line, c.text, back, len(p.runDirs))
		}
		return p.runDirs[len(p.runDirs)-back], nil
	}
	for _, ph := range []struct {
		name string
		back int
	}{{"RUN_DIR", 1}, {"RUN_B", 1}, {"RUN_A", 2}} {
		if strings.Contains(s, ph.name) {
			d, err := last(ph.back)
			if err != nil {
				return "", err
			}
			s = strings.ReplaceAll(s, ph.name, d)
		}
	}
	return s, nil
}

func (p *page) run(c command, timeout time.Duration) {
	t := p.t
	s, err := p.expand(c)
	if err != nil {
		t.Error(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", s)
	cmd.Dir, cmd.Env = p.dir, append(append([]string(nil), p.env...), p.blockEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	var pr *os.File
	var read chan struct{} // closed once a Ctrl-C command's output is read
	start := time.Now()
	if c.sigint {
		var pw *os.File
		pr, pw, _ = os.Pipe()
		cmd.Stdout, cmd.Stderr = pw, pw
		if err := cmd.Start(); err != nil {
			t.Errorf("%s:%d: %s: %v", c.file, c.line, c.text, err)
			return
		}
		pw.Close()
		sc := bufio.NewScanner(pr)
		if sc.Scan() {
			out.WriteString(sc.Text() + "\n")
		}
		time.Sleep(500 * time.Millisecond)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		read = make(chan struct{})
		go func() {
			defer close(read)
			for sc.Scan() {
				out.WriteString(sc.Text() + "\n")
			}
		}()
	} else {
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Errorf("%s:%d: %s: %v", c.file, c.line, c.text, err)
			return
		}
	}
	err = cmd.Wait()
	if read != nil {
		// The rest of the output is read before out is: the pipe ends when
		// the command and what it started have exited; at the deadline
		// their group is killed and the pipe closed here.
		select {
		case <-read:
		case <-ctx.Done():
			pr.Close()
			<-read
		}
		pr.Close()
	}
	code := exitCode(err)
	if ctx.Err() != nil {
		t.Errorf("%s:%d: `%s` did not finish within %s:\n%s", c.file, c.line, c.text, timeout, tail(out.String()))
		return
	}
	for _, m := range runDirRE.FindAllStringSubmatch(out.String(), -1) {
		d := m[1]
		if !filepath.IsAbs(d) {
			d = filepath.Join(p.dir, d)
		}
		p.runDirs = append(p.runDirs, d)
	}
	t.Logf("%s:%d: `%s`: exit %d in %.1fs", c.file, c.line, s, code, time.Since(start).Seconds())
	if code != c.exit {
		t.Errorf("%s:%d: `%s` exited %d, the page documents %d:\n%s", c.file, c.line, c.text, code, c.exit, tail(out.String()))
	}
}

// exitCode is the exit code of a finished command: -1 when it did not run
// or was killed by a signal.
func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func tail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 30 {
		lines = append([]string{fmt.Sprintf("[... %d lines]", len(lines)-30)}, lines[len(lines)-30:]...)
	}
	return strings.Join(lines, "\n")
}

// notRunHere are commands a page shows that this test must not run itself,
// each with what runs them instead.
var notRunHere = map[string]string{
	"make test":    "this suite is what `make test` runs (.ci/run calls it on every change)",
	"make figures": "TestMakeFigures runs it, in make test's pass without the race detector",
	"go install github.com/labrunner/labrunner/cmd/labrunner@latest": "needs the published module and the network; `go install ./cmd/labrunner` from the tree is run instead",
}

func TestDocumentedCommands(t *testing.T) {
	t.Parallel()
	// The commands run a labrunner built without the detector, in
	// processes of their own: under it they would check nothing more, and
	// their CPU (the README's nightly, verdicts.md's campaign) would
	// lengthen the race pass.
	if raceshare.SecondPassOnly(t, "the commands run a labrunner built without the detector, in processes of their own") {
		return
	}
	bin := labrunnerBinary(t)
	for _, doc := range documents(t) {
		blocks, err := shellBlocks(doc)
		if err != nil {
			t.Fatal(err)
		}
		if len(blocks) == 0 {
			continue
		}
		t.Run(filepath.Base(doc), func(t *testing.T) {
			// Pages share nothing (each has its scratch directory, HOME,
			// lock directory and InfluxDB): they run side by side.
			t.Parallel()
			p := newPage(t, bin)
			for _, b := range blocks {
				if test, ok := b.directive["checked-by"]; ok {
					if !testExists(t, test) {
						t.Errorf("%s:%d: checked-by=%s names no test of the repository", b.file, b.line, test)
					}
					continue
				}
				p.setUp(b)
				before := len(p.runDirs)
				for _, c := range b.cmds {
					cmdText, _, _ := cutComment(c.text)
					if why, ok := notRunHere[cmdText]; ok {
						t.Logf("%s:%d: `%s` not run here: %s", c.file, c.line, cmdText, why)
						continue
					}
					p.run(c, 5*time.Minute)
				}
				p.tearDown(b)
				for key, check := range map[string]func(string){
					"default-run":  func(dir string) { checkDefaultRun(t, bin, dir) },
					"campaign-run": func(dir string) { checkCampaignRun(t, dir) },
				} {
					if _, ok := b.directive[key]; !ok {
						continue
					}
					// A nightly names its run directory twice (status,
					// log).
					if runs := slices.Compact(slices.Clone(p.runDirs[before:])); len(runs) != 1 {
						t.Errorf("%s:%d: %s: the block made %d run directories, want one", b.file, b.line, key, len(runs))
					} else {
						check(runs[0])
					}
				}
			}
		})
	}
}

// testExists reports whether some _test.go file of the repository defines
// func name(.
func testExists(t *testing.T, name string) bool {
	t.Helper()
	found := false
	filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil || found {
			return nil
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".cache") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			if data, err := os.ReadFile(path); err == nil && bytes.Contains(data, []byte("func "+name+"(")) {
				found = true
			}
		}
		return nil
	})
	return found
}

// setUp applies a block's directive.
func (p *page) setUp(b block) {
	t := p.t
	p.blockEnv = nil
	if lab, ok := b.directive["lab"]; ok {
		// A copy in the scratch directory: a lab's relative paths (its
		// results root) must not lead back into the repository.
		data, err := os.ReadFile(filepath.Join("..", lab))
		if err != nil {
			t.Fatalf("%s:%d: lab=%s: %v", b.file, b.line, lab, err)
		}
		copyPath := filepath.Join(p.dir, "labs", filepath.Base(lab))
		if err := os.MkdirAll(filepath.Dir(copyPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(copyPath, data, 0o644); err != nil {
			t.Fatal(err)
		}
		p.blockEnv = append(p.blockEnv, "LABRUNNER_LAB="+copyPath)
	}
	if _, ok := b.directive["influx"]; ok && p.influx == nil {
		data := filepath.Join(p.dir, "influxdb")
		if err := os.MkdirAll(data, 0o755); err != nil {
			t.Fatal(err)
		}
		srv, err := influxtest.Start(data, influxtest.Options{User: "labrunner", Password: "secret", Databases: []string{"nightly", "labrunner"}})
		if err != nil {
			t.Fatalf("%s:%d: starting InfluxDB for the block: %v", b.file, b.line, err)
		}
		t.Cleanup(srv.Stop)
		p.influx = srv
		if err := os.WriteFile(filepath.Join(p.dir, ".influx-token"), []byte(srv.Token()+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// tearDown checks what a block's directive promises.
func (p *page) tearDown(b block) {
	if _, ok := b.directive["influx"]; !ok || p.influx == nil {
		return
	}
	for _, db := range []string{"nightly", "labrunner"} {
		r, err := p.influx.Query(db, "SHOW MEASUREMENTS")
		if err != nil {
			p.t.Errorf("%s:%d: querying InfluxDB database %s: %v", b.file, b.line, db, err)
			continue
		}
		if len(r.Series) == 0 || len(r.Series[0].Values) == 0 {
			p.t.Errorf("%s:%d: the block's commands sent no points to database %s", b.file, b.line, db)
		}
	}
}
