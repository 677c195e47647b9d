package docs

import (
	"errors"
	"fmt"
	"go/build"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
	_ "github.com/labrunner/labrunner/boards/emu/designs" // the emulated designs, as the CLI links them
	"github.com/labrunner/labrunner/golden"
	_ "github.com/labrunner/labrunner/golden/models" // the golden models, as the CLI links them
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/selftest"
	_ "github.com/labrunner/labrunner/selftest/all" // the designs' tests, as the CLI links them
)

// The design-consistency check: every design of the catalogue has every
// part docs/adding-a-design.md lists, so that a forgotten part (above all a
// forgotten blank import, which Go accepts and which fails only when a
// plan runs) fails `go test ./docs` with the design, the part and the fix.
//
// The check asks two small interfaces, what the registries answer and what
// the repository holds; the test runs it on the real ones (the registries
// this test binary links through the same aggregate imports as the CLI,
// and the files of this tree) and on a fake design from which each part in
// turn is removed, to show that every part's check can fail.

// registries is what the init-time registries answer.
type registries interface {
	// EmulatedDesigns are the designs emu.RegisterDesign registered.
	EmulatedDesigns() []string
	// Faults maps a design to the emulator faults registered for it.
	Faults() map[string][]string
	// GoldenModels are the names golden.Register registered.
	GoldenModels() []string
	// Setup says whether the design registered its setup step, or said it
	// needs none (selftest.RegisterSetup, RegisterNoSetup).
	Setup(design string) bool
	// Tests maps a design to its registered tests (generic tests left out).
	Tests() map[string][]string
	// DecodePlan decodes a plan's params: and its boards' params: into
	// the parameter structs its design registered with its setup
	// (selftest.DecodePlan).
	DecodePlan(pl *labconfig.Plan) error
}

// repository is what the tree holds.
type repository interface {
	// Manifests are the catalogue's designs.
	Manifests() []*bitstreams.Manifest
	// Bitstream returns an error when the catalogue gives no bitstream file
	// of design for part that checks against its manifest.
	Bitstream(design, part string) error
	// Plans are the default lab's plans.
	Plans() []labconfig.Plan
	// Imports lists the module packages (paths relative to the module,
	// "boards/emu/exanet") the non-test files of a package import; an error
	// when the folder holds no Go package.
	Imports(pkg string) ([]string, error)
	// ReadFile reads a file by its path in the repository.
	ReadFile(path string) ([]byte, error)
}

// notNetworkDesigns are catalogue entries the recipe does not apply to,
// each with the reason. (A builtin manifest, mgmt, is left out by rule: it
// is a block every board has, never a design a plan programs.)
var notNetworkDesigns = map[string]string{
	"bridge-example": "the UART bridge's example design (rtl/): the RTL co-simulation serves it, not the emulator, " +
		"and it comes from no paper, so it has no golden model, design tests, traffic driver or readings; " +
		"docs/uart-bridge.md documents it",
}

// recipeDoc is the page the parts are steps of.
const recipeDoc = "docs/adding-a-design.md"

// part is one step of the recipe that can be checked.
type part struct {
	// key names the part in messages and in the step's heading.
	key string
	// needs is a part without which this one cannot be checked (its
	// problem would only repeat the other's).
	needs string
	// missing says what is missing of the part for design d, "" when
	// nothing is.
	missing func(c *checker, d string) string
	// fix says what to do, for design d.
	fix func(d string) string
}

// problem is one part missing for one design.
type problem struct {
	design, part, missing, fix string
	step                       int
}

func (p problem) String() string {
	return fmt.Sprintf("design %s: %s: %s; fix: %s (%s, step %d)", p.design, p.part, p.missing, p.fix, recipeDoc, p.step)
}

// checker holds what the parts' checks share.
type checker struct {
	reg  registries
	repo repository
	man  map[string]*bitstreams.Manifest
}

func (c *checker) imports(pkg, imp string) (bool, error) {
	imps, err := c.repo.Imports(pkg)
	if err != nil {
		return false, err
	}
	return slices.Contains(imps, imp), nil
}

// importedBy checks that an aggregate package blank-imports the design's
// package: what Go cannot check, and what a registry needs to be filled.
func importedBy(c *checker, agg, pkg string) string {
	if _, err := c.repo.Imports(pkg); err != nil {
		return fmt.Sprintf("there is no package %s (%v)", pkg, err)
	}
	ok, err := c.imports(agg, pkg)
	if err != nil {
		return fmt.Sprintf("%s: %v", agg, err)
	}
	if !ok {
		return fmt.Sprintf("%s does not import %s, so nothing that links %s (the CLI) sees the design", agg, pkg, agg)
	}
	return ""
}

// parts are the recipe's checked steps, in the order of recipeDoc.
var parts = []part{
	{key: "manifest",
		missing: func(c *checker, d string) string {
			m := c.man[d]
			if m == nil {
				return "the catalogue has no manifest of that name"
			}
			// What the generic registers test reads on every design:
			// identity, and read-write SCRATCH registers.
			var names []string
			scratch := false
			for _, r := range m.Registers {
				names = append(names, r.Name)
				scratch = scratch || r.Access == bitstreams.RW && strings.HasPrefix(r.Name, "SCRATCH")
			}
			for _, want := range []string{"ID", "VERSION"} {
				if !slices.Contains(names, want) {
					return fmt.Sprintf("%s: the register map has no %s register", m.Source, want)
				}
			}
			if !scratch {
				return m.Source + ": the register map has no read-write SCRATCH register"
			}
			return ""
		},
		fix: func(d string) string {
			return fmt.Sprintf("write bitstreams/catalogue/%s.yaml: name, version, parts, clock_mhz, id, version_word, windows and the register map (ID, VERSION and a read-write SCRATCH register first: the registers test reads them on every design)", d)
		}},
	{key: "config", needs: "manifest",
		missing: func(c *checker, d string) string {
			if len(c.man[d].Config) == 0 {
				return c.man[d].Source + " declares no configuration values (config:)"
			}
			return ""
		},
		fix: func(d string) string {
			return fmt.Sprintf("add a config: block to bitstreams/catalogue/%s.yaml: every value of the build golden is fed (name, register, value, unit, paper, source, deviation)", d)
		}},
	{key: "report", needs: "manifest",
		missing: func(c *checker, d string) string {
			if r := c.man[d].Report; r == nil || len(r.Figures) == 0 {
				return c.man[d].Source + " describes no report figures (report:)"
			}
			return ""
		},
		fix: func(d string) string {
			return fmt.Sprintf("add a report: block to bitstreams/catalogue/%s.yaml: the metrics the design's tests record and the figures a run's report draws", d)
		}},
	{key: "bitstreams", needs: "manifest",
		missing: func(c *checker, d string) string {
			m := c.man[d]
			if len(m.Parts) == 0 {
				return m.Source + " lists no parts"
			}
			for _, p := range m.Parts {
				if err := c.repo.Bitstream(d, p); err != nil {
					return fmt.Sprintf("no bitstream for part %s: %v", p, err)
				}
			}
			return ""
		},
		fix: func(d string) string {
			return "run go generate ./bitstreams/... and commit bitstreams/files and the manifest's files: list"
		}},
	{key: "emulator import",
		missing: func(c *checker, d string) string {
			return importedBy(c, "boards/emu/designs", "boards/emu/"+d)
		},
		fix: func(d string) string {
			return fmt.Sprintf("write the emulator package boards/emu/%s and blank-import it in boards/emu/designs/designs.go", d)
		}},
	{key: "emulator", needs: "emulator import",
		missing: func(c *checker, d string) string {
			if !slices.Contains(c.reg.EmulatedDesigns(), d) {
				return fmt.Sprintf("no emulator factory is registered (registered: %s)", strings.Join(c.reg.EmulatedDesigns(), ", "))
			}
			return ""
		},
		fix: func(d string) string {
			return fmt.Sprintf("call emu.RegisterDesign(%q, factory) from an init function of boards/emu/%s", d, d)
		}},
	{key: "faults", needs: "emulator",
		missing: func(c *checker, d string) string {
			if len(c.reg.Faults()[d]) == 0 {
				return "the emulator registers no fault for it, so no verdict of its plan is shown to be able to fail"
			}
			return ""
		},
		fix: func(d string) string {
			return fmt.Sprintf("call emu.RegisterFault(emu.FaultInfo{Design: %q, ...}) from boards/emu/%s for each way the hardware can go wrong that a test must catch", d, d)
		}},
	{key: "golden import",
		missing: func(c *checker, d string) string {
			return importedBy(c, "golden/models", "golden/"+d)
		},
		fix: func(d string) string {
			return fmt.Sprintf("write the golden model golden/%s and blank-import it in golden/models/models.go", d)
		}},
	{key: "golden model", needs: "golden import",
		missing: func(c *checker, d string) string {
			if !slices.Contains(c.reg.GoldenModels(), d) {
				return fmt.Sprintf("no golden model of that name is registered (registered: %s)", strings.Join(c.reg.GoldenModels(), ", "))
			}
			return ""
		},
		fix: func(d string) string {
			return fmt.Sprintf("call golden.Register with a Model whose Name() is %q from an init function of golden/%s", d, d)
		}},
	{key: "selftest import",
		missing: func(c *checker, d string) string {
			return importedBy(c, "selftest/all", "selftest/"+d)
		},
		fix: func(d string) string {
			return fmt.Sprintf("write the design's tests in selftest/%s and blank-import it in selftest/all/all.go", d)
		}},
	{key: "setup", needs: "selftest import",
		missing: func(c *checker, d string) string {
			if !c.reg.Setup(d) {
				return "no setup step is registered, and the design does not say it needs none"
			}
			return ""
		},
		fix: func(d string) string {
			return fmt.Sprintf("call selftest.RegisterSetup(%q, setup, selftest.DesignParams{Plan: planParams{...}, Board: boardParams{}}) from selftest/%s, or selftest.RegisterNoSetup(%q, why, selftest.DesignParams{...}) when there is nothing to configure", d, d, d)
		}},
	{key: "tests", needs: "selftest import",
		missing: func(c *checker, d string) string {
			if len(c.reg.Tests()[d]) == 0 {
				return "no test of the design is registered"
			}
			return ""
		},
		fix: func(d string) string {
			return fmt.Sprintf("call selftest.Register(selftest.Test{Design: %q, ...}) from selftest/%s for each test a plan can name", d, d)
		}},
	{key: "traffic driver",
		missing: func(c *checker, d string) string {
			pkg := "traffic/" + d
			if _, err := c.repo.Imports(pkg); err != nil {
				return fmt.Sprintf("there is no package %s (%v)", pkg, err)
			}
			if ok, err := c.imports("selftest/"+d, pkg); err != nil || !ok {
				return fmt.Sprintf("selftest/%s does not use %s", d, pkg)
			}
			return ""
		},
		fix: func(d string) string {
			return fmt.Sprintf("write traffic/%s, the driver of the design's generators and counters over drivers/regmap, and drive the boards through it from selftest/%s", d, d)
		}},
	{key: "plan",
		missing: func(c *checker, d string) string {
			found := false
			for _, p := range c.repo.Plans() {
				if p.Design != d {
					continue
				}
				found = true
				if err := c.reg.DecodePlan(&p); err != nil {
					return fmt.Sprintf("the default lab's plan %s gives params: its design does not declare: %v", p.Name, err)
				}
			}
			if !found {
				return "the default lab (labconfig/default.yaml) has no plan of the design"
			}
			return ""
		},
		fix: func(d string) string {
			return fmt.Sprintf("add the design's boards, cables and a plan with design: %s to labconfig/default.yaml, the plan and each board with the params: the design declares (labrunner lab tests lists them)", d)
		}},
	{key: "docs page",
		missing: func(c *checker, d string) string {
			page := d + ".md"
			if _, err := c.repo.ReadFile("docs/" + page); err != nil {
				return "there is no docs/" + page
			}
			readme, err := c.repo.ReadFile("README.md")
			if err != nil {
				return err.Error()
			}
			if !strings.Contains(string(readme), page) {
				return "README.md does not point to docs/" + page
			}
			return ""
		},
		fix: func(d string) string {
			return fmt.Sprintf("write docs/%s.md (the design's programming model, its plan, what each test judges) and name it in README.md's list of pages", d)
		}},
	{key: "readings",
		missing: func(c *checker, d string) string {
			src, err := c.repo.ReadFile("docs/readings.md")
			if err != nil {
				return err.Error()
			}
			for _, tree := range []string{"boards/emu/", "golden/", "selftest/", "traffic/"} {
				if regexp.MustCompile(regexp.QuoteMeta(tree+d) + `\b`).Match(src) {
					return ""
				}
			}
			return "docs/readings.md records no reading that shapes the design's code"
		},
		fix: func(d string) string {
			return fmt.Sprintf("record in docs/readings.md, under its paper, each place where the paper is ambiguous: question, reading, reasons, and the code it shapes (boards/emu/%s, golden/%s, selftest/%s)", d, d, d)
		}},
}

// designsOf lists every design the repository or a registry knows, the
// catalogue's first: a design known only to a registry or a plan is one
// whose manifest is missing.
func designsOf(reg registries, repo repository) []string {
	seen := map[string]bool{}
	var out []string
	add := func(d string) {
		if d != "" && !seen[d] && notNetworkDesigns[d] == "" {
			seen[d] = true
			out = append(out, d)
		}
	}
	for _, m := range repo.Manifests() {
		if !m.Builtin {
			add(m.Name)
		}
	}
	for _, d := range reg.EmulatedDesigns() {
		add(d)
	}
	for _, ds := range []map[string][]string{reg.Tests(), reg.Faults()} {
		var keys []string
		for d := range ds {
			keys = append(keys, d)
		}
		sort.Strings(keys)
		for _, d := range keys {
			add(d)
		}
	}
	for _, p := range repo.Plans() {
		add(p.Design)
	}
	return out
}

// checkDesigns returns every part missing for every design.
func checkDesigns(reg registries, repo repository) []problem {
	c := &checker{reg: reg, repo: repo, man: map[string]*bitstreams.Manifest{}}
	for _, m := range repo.Manifests() {
		c.man[m.Name] = m
	}
	var out []problem
	for _, d := range designsOf(reg, repo) {
		failed := map[string]bool{}
		for i, p := range parts {
			if p.needs != "" && failed[p.needs] {
				failed[p.key] = true
				continue
			}
			if msg := p.missing(c, d); msg != "" {
				failed[p.key] = true
				out = append(out, problem{design: d, part: p.key, missing: msg, fix: p.fix(d), step: i + 1})
			}
		}
	}
	return out
}

// TestEveryDesignFollowsTheRecipe is the check on this tree.
func TestEveryDesignFollowsTheRecipe(t *testing.T) {
	repo := newRepoTree(t)
	ds := designsOf(liveRegistries{}, repo)
	if len(ds) < 4 {
		t.Fatalf("the check sees only the designs %v: it cannot be looking at this tree", ds)
	}
	t.Logf("designs checked: %s", strings.Join(ds, ", "))
	for _, p := range checkDesigns(liveRegistries{}, repo) {
		t.Error(p)
	}
	for d := range notNetworkDesigns {
		if _, err := bitstreams.Default().Design(d); err != nil {
			t.Errorf("notNetworkDesigns names %s, which the catalogue does not have: remove it", d)
		}
	}
}

// TestRecipeCheckFailsForEachMissingPart takes a fake design that has
// every part and removes each part in turn: the check must name the
// design, that part and its fix, and nothing else.
func TestRecipeCheckFailsForEachMissingPart(t *testing.T) {
	const d = "sixth"
	if ps := checkDesigns(completeFake(d), completeFake(d)); len(ps) != 0 {
		t.Fatalf("the complete fake design fails the check: %v", ps)
	}
	for i, p := range parts {
		remove, ok := removals[p.key]
		if !ok {
			t.Errorf("part %q has no removal in this test: add one to removals, so that its check is shown to fail", p.key)
			continue
		}
		t.Run(p.key, func(t *testing.T) {
			f := completeFake(d)
			remove(f, d)
			got := checkDesigns(f, f)
			if len(got) != 1 {
				t.Fatalf("without its %s the design fails %d checks, want exactly that one: %v", p.key, len(got), got)
			}
			msg := got[0].String()
			for _, want := range []string{"design " + d + ":", ": " + p.key + ":", "fix: " + p.fix(d), fmt.Sprintf("step %d", i+1)} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not say %q", msg, want)
				}
			}
			t.Log(msg)
		})
	}
	for key := range removals {
		if !slices.ContainsFunc(parts, func(p part) bool { return p.key == key }) {
			t.Errorf("removals names %q, which is no part of the recipe", key)
		}
	}
}

// A plan in the default lab whose params: its design does not declare is
// a missing part of the plan step too.
func TestRecipeCheckDecodesThePlan(t *testing.T) {
	const d = "sixth"
	f := completeFake(d)
	f.badPlans = map[string]error{d: errors.New(`params.fifo_dept: unknown parameter "fifo_dept"`)}
	got := checkDesigns(f, f)
	if len(got) != 1 || got[0].part != "plan" || !strings.Contains(got[0].missing, `the default lab's plan sixth gives params: its design does not declare: params.fifo_dept`) {
		t.Fatalf("a plan that does not decode: %v", got)
	}
	t.Log(got[0])
}

// A builtin block and the entries of notNetworkDesigns are not designs,
// and a design no manifest describes is found from the registries.
func TestRecipeCheckFindsEveryDesign(t *testing.T) {
	f := completeFake("sixth")
	f.manifests = append(f.manifests,
		&bitstreams.Manifest{Name: "mgmt", Builtin: true},
		&bitstreams.Manifest{Name: "bridge-example"})
	f.emulated = append(f.emulated, "seventh")
	got := checkDesigns(f, f)
	if len(got) == 0 || got[0].design != "seventh" || got[0].part != "manifest" {
		t.Fatalf("a design registered with the emulator but in no manifest: %v", got)
	}
	for _, p := range got {
		if p.design != "seventh" {
			t.Errorf("%s", p)
		}
	}
}

// The page's steps are the parts, in order: step N's heading names part
// N's key, so the fix a message points to is the one the page explains.
func TestRecipePageListsTheParts(t *testing.T) {
	data, err := os.ReadFile(filepath.Base(recipeDoc))
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile("(?m)^### Step (\\d+): .*\\(`([^`]+)`\\)\\s*$")
	var keys []string
	for _, m := range heading.FindAllStringSubmatch(string(data), -1) {
		if n, _ := strconv.Atoi(m[1]); n != len(keys)+1 {
			t.Errorf("%s: step %s follows step %d", recipeDoc, m[1], len(keys))
		}
		keys = append(keys, m[2])
	}
	var want []string
	for _, p := range parts {
		want = append(want, p.key)
	}
	if !slices.Equal(keys, want) {
		t.Errorf("%s's steps name the parts %q; the check has %q", recipeDoc, keys, want)
	}
}

// liveRegistries answers from the registries this binary links.
type liveRegistries struct{}

func (liveRegistries) EmulatedDesigns() []string { return emu.DesignNames() }

func (liveRegistries) Faults() map[string][]string {
	out := map[string][]string{}
	for _, f := range emu.Faults() {
		if f.Design != "" {
			out[f.Design] = append(out[f.Design], f.Name)
		}
	}
	return out
}

func (liveRegistries) GoldenModels() []string { return golden.Names() }

func (liveRegistries) Setup(design string) bool {
	has, _ := selftest.SetupOf(design)
	return has
}

func (liveRegistries) DecodePlan(pl *labconfig.Plan) error {
	_, err := selftest.DecodePlan(pl)
	return err
}

func (liveRegistries) Tests() map[string][]string {
	out := map[string][]string{}
	for _, t := range selftest.Tests() {
		if t.Design != "" {
			out[t.Design] = append(out[t.Design], t.Name)
		}
	}
	return out
}

// repoTree answers from this repository's files.
type repoTree struct {
	root string
	lab  *labconfig.Lab
}

func newRepoTree(t *testing.T) *repoTree {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	lab, err := labconfig.Default(labconfig.Known{})
	if err != nil {
		t.Fatalf("the default lab: %v", err)
	}
	return &repoTree{root: root, lab: lab}
}

func (r *repoTree) Manifests() []*bitstreams.Manifest { return bitstreams.Default().Designs() }

func (r *repoTree) Bitstream(design, part string) error {
	_, err := bitstreams.Default().Image(design, part)
	return err
}

func (r *repoTree) Plans() []labconfig.Plan { return r.lab.Plans }

func (r *repoTree) Imports(pkg string) ([]string, error) {
	bp, err := build.Default.ImportDir(filepath.Join(r.root, filepath.FromSlash(pkg)), 0)
	if err != nil {
		var none *build.NoGoError
		if errors.As(err, &none) || errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no Go files in %s", pkg)
		}
		return nil, err
	}
	var out []string
	for _, imp := range bp.Imports {
		if rel, ok := strings.CutPrefix(imp, module); ok {
			out = append(out, rel)
		}
	}
	return out, nil
}

func (r *repoTree) ReadFile(path string) ([]byte, error) {
	return os.ReadFile(filepath.Join(r.root, filepath.FromSlash(path)))
}

// fakeRepo is a repository and its registries held in tables.
type fakeRepo struct {
	manifests []*bitstreams.Manifest
	files     map[string]bool // "design/part" with a bitstream
	emulated  []string
	faults    map[string][]string
	golden    []string
	setups    map[string]bool
	tests     map[string][]string
	plans     []labconfig.Plan
	badPlans  map[string]error    // plan -> why its params do not decode
	imports   map[string][]string // package -> its imports; absent: no package
	text      map[string]string   // file -> content
}

// completeFake is a repository in which design d has every part.
func completeFake(d string) *fakeRepo {
	return &fakeRepo{
		manifests: []*bitstreams.Manifest{{
			Name: d, Source: "bitstreams/catalogue/" + d + ".yaml", Parts: []string{"xczu3eg-sbva484-1-e"},
			Registers: []bitstreams.Register{{Name: "ID"}, {Name: "VERSION"}, {Name: "SCRATCH", Access: bitstreams.RW}},
			Config:    []bitstreams.ConfigValue{{Name: "clock_khz", Value: 100000}},
			Report:    &bitstreams.Report{Figures: []bitstreams.ReportFigure{{Title: "Throughput", Metric: d + ".throughput"}}},
		}},
		files:    map[string]bool{d + "/xczu3eg-sbva484-1-e": true},
		emulated: []string{d},
		faults:   map[string][]string{d: {d + "-stuck"}},
		golden:   []string{"ordering", d},
		setups:   map[string]bool{d: true},
		tests:    map[string][]string{d: {"throughput"}},
		plans:    []labconfig.Plan{{Name: d, Design: d}},
		imports: map[string][]string{
			"boards/emu/designs": {"boards/emu/" + d},
			"boards/emu/" + d:    {"boards/emu", "bitstreams"},
			"golden/models":      {"golden/" + d},
			"golden/" + d:        {"golden", "results"},
			"selftest/all":       {"selftest/" + d},
			"selftest/" + d:      {"selftest", "golden/" + d, "traffic/" + d},
			"traffic/" + d:       {"drivers/regmap"},
		},
		text: map[string]string{
			"docs/" + d + ".md": "# " + d,
			"README.md":         "Start with docs/: `" + d + ".md`",
			"docs/readings.md":  "- **Shapes.** `golden/" + d + "/model.go`, `boards/emu/" + d + "`",
		},
	}
}

// removals take one part of the recipe away from design d.
var removals = map[string]func(f *fakeRepo, d string){
	"manifest":        func(f *fakeRepo, d string) { f.manifests = nil },
	"config":          func(f *fakeRepo, d string) { f.manifests[0].Config = nil },
	"report":          func(f *fakeRepo, d string) { f.manifests[0].Report = nil },
	"bitstreams":      func(f *fakeRepo, d string) { delete(f.files, d+"/xczu3eg-sbva484-1-e") },
	"emulator import": func(f *fakeRepo, d string) { f.imports["boards/emu/designs"] = nil },
	"emulator":        func(f *fakeRepo, d string) { f.emulated = nil },
	"faults":          func(f *fakeRepo, d string) { delete(f.faults, d) },
	"golden import":   func(f *fakeRepo, d string) { f.imports["golden/models"] = nil },
	"golden model":    func(f *fakeRepo, d string) { f.golden = []string{"ordering"} },
	"selftest import": func(f *fakeRepo, d string) { f.imports["selftest/all"] = nil },
	"setup":           func(f *fakeRepo, d string) { delete(f.setups, d) },
	"tests":           func(f *fakeRepo, d string) { delete(f.tests, d) },
	"traffic driver":  func(f *fakeRepo, d string) { delete(f.imports, "traffic/"+d) },
	"plan":            func(f *fakeRepo, d string) { f.plans = nil },
	"docs page":       func(f *fakeRepo, d string) { delete(f.text, "docs/"+d+".md") },
	"readings":        func(f *fakeRepo, d string) { f.text["docs/readings.md"] = "- **Shapes.** `golden/" + d + "x`" },
}

func (f *fakeRepo) EmulatedDesigns() []string   { return f.emulated }
func (f *fakeRepo) Faults() map[string][]string { return f.faults }
func (f *fakeRepo) GoldenModels() []string      { return f.golden }
func (f *fakeRepo) Setup(design string) bool    { return f.setups[design] }
func (f *fakeRepo) Tests() map[string][]string  { return f.tests }

func (f *fakeRepo) DecodePlan(pl *labconfig.Plan) error { return f.badPlans[pl.Name] }

func (f *fakeRepo) Manifests() []*bitstreams.Manifest { return f.manifests }

func (f *fakeRepo) Bitstream(design, part string) error {
	if !f.files[design+"/"+part] {
		return fmt.Errorf("bitstreams/catalogue/%s.yaml lists no file for part %s", design, part)
	}
	return nil
}

func (f *fakeRepo) Plans() []labconfig.Plan { return f.plans }

func (f *fakeRepo) Imports(pkg string) ([]string, error) {
	imps, ok := f.imports[pkg]
	if !ok {
		return nil, fmt.Errorf("no Go files in %s", pkg)
	}
	return imps, nil
}

func (f *fakeRepo) ReadFile(path string) ([]byte, error) {
	s, ok := f.text[path]
	if !ok {
		return nil, fmt.Errorf("open %s: %w", path, os.ErrNotExist)
	}
	return []byte(s), nil
}
