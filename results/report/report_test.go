package report

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/compare"
)

// makeRun writes a run directory through results.Dir, as a nightly does:
// ExaNet bandwidth and RTT (described by the catalogue's exanet manifest)
// with golden expectations and RTT samples, a counter that stays at zero,
// a design without a report: block, and the failures a faulty board gives:
// a reading outside its band, a test with no reading and a long message, a
// traced path that differs, an infrastructure error.
func makeRun(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	d, err := results.Create(root, results.Run{Lab: "lab", Plans: []string{"mesh", "other"}, Start: time.Date(2026, 5, 1, 1, 0, 0, 0, time.UTC),
		Bitstreams: []results.BitstreamInfo{{Board: "exa-00", Plan: "mesh", Design: "exanet"}, {Board: "exa-10", Plan: "mesh", Design: "exanet"}, {Board: "x-0", Plan: "other", Design: "nodesign"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	at := time.Date(2026, 5, 1, 1, 0, 1, 0, time.UTC)
	score := func(m results.Measurement, e results.Expectation) {
		at = at.Add(time.Millisecond)
		m.Time = at
		d.AddMeasurement(m)
		d.AddExpectation(m.Test, m.Board, e)
		d.AddVerdict(results.Score(m, e))
	}
	for _, b := range []string{"exa-00", "exa-10"} {
		for _, pl := range []int{32, 64, 128, 256, 512} {
			ps := results.Params{"path": "router", "payload": fmt.Sprint(pl)}
			gold := float64(pl) / 40
			v := gold * 1.02
			if pl == 64 && b == "exa-10" {
				v = gold * 0.51 // the failure that must come first
			}
			score(results.Measurement{Plan: "mesh", Test: "bandwidth", Board: b, Design: "exanet", Metric: "exanet.bandwidth", Params: ps, Value: v, Unit: "Gb/s"},
				results.Expectation{Metric: "exanet.bandwidth", Params: ps, Value: gold, RelTol: 0.1, Unit: "Gb/s", Source: "ExaNet §4.3, Fig. 9: 76% of the 20 Gb/s peak",
					Budget: "2% paper rounding + 1 cycle per packet"})
			for _, hops := range []string{"1", "2"} {
				ps := results.Params{"hops": hops, "payload": fmt.Sprint(pl), "peer": "exa-11"}
				g := 0.8 + float64(pl)/100
				score(results.Measurement{Plan: "mesh", Test: "latency", Board: b, Design: "exanet", Metric: "exanet.rtt", Params: ps, Value: g, Unit: "us",
					Samples: []float64{g * 0.98, g, g, g * 1.01, g * 1.05}},
					results.Expectation{Metric: "exanet.rtt", Params: ps, Value: g, Min: results.Float(g * 0.85), Max: results.Float(g * 1.3), Unit: "us",
						Source: "ExaNet §4.2, Fig. 7/8: round trip", Wide: "the paper gives an upper bound only"})
			}
		}
		for _, port := range []string{"sfp0", "sfp1"} {
			ps := results.Params{"port": port}
			score(results.Measurement{Plan: "mesh", Test: "links.crc", Board: b, Design: "exanet", Metric: "exanet.link.crc_errors", Params: ps, Unit: "errors"},
				results.Expectation{Metric: "exanet.link.crc_errors", Params: ps, Value: 0, Unit: "errors", Source: "ExaNet §3.4"})
		}
	}
	// A test that made its own verdict: no reading, the reason in prose,
	// the expectation in its human form only.
	at = at.Add(time.Millisecond)
	long := "0 of 2000 packets consumed at exa-10: the traffic generator stalled (no word moved for 65536 cycles); link exa-00:sfp0: credits 8 of 1024, threshold 8, stalled 724355 cycles — transmission suspended for want of credit: the receiver is not returning credits (credit leak)"
	d.AddVerdict(results.Verdict{Time: at, Plan: "mesh", Test: "bandwidth", Board: "exa-00", Design: "exanet", Metric: "exanet.bandwidth",
		Params: results.Params{"path": "link", "link": "exa-00:sfp0", "payload": "512"}, Status: results.Fail, Class: "design", Unit: "Gb/s",
		MeasuredText: long, Message: long, Expected: "9.01408 Gb/s ±3.41%", Source: "ExaNet §4.3, Fig. 10: 90% of the 10 Gb/s cap at 512 B"})
	// A traced path that differs: short text values side by side.
	tp := results.Params{"src": "0,0,0", "dst": "1,1,0"}
	score(results.Measurement{Plan: "mesh", Test: "dor_path", Board: "exa-00", Design: "exanet", Metric: "exanet.dor_path", Params: tp, Text: "(0,0,0)-vc1->(0,1,0)-vc1->(1,1,0)"},
		results.Expectation{Metric: "exanet.dor_path", Params: tp, Text: "(0,0,0)-vc1->(1,0,0)-vc1->(1,1,0)", Source: "ExaNet §3.3: DOR in order XYZ"})
	for _, load := range []string{"0.1", "0.5", "0.9"} {
		ps := results.Params{"load": load}
		score(results.Measurement{Plan: "other", Test: "latency", Board: "x-0", Design: "nodesign", Metric: "nodesign.latency", Params: ps, Value: 2, Unit: "us"},
			results.Expectation{Metric: "nodesign.latency", Params: ps, Min: results.Float(0), Max: results.Float(5), Source: "Somewhere §5"})
	}
	d.AddVerdict(results.Verdict{Time: at, Plan: "mesh", Test: "links", Board: "exa-11", Status: results.Error, Class: "infrastructure", Message: "exa-11 did not answer <script>"})
	if err := d.Finish("failed", 1); err != nil {
		t.Fatal(err)
	}
	return d.Path
}

func writeReport(t *testing.T, dir string, opts Options) (string, *html.Node) {
	t.Helper()
	path, err := Write(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the report is not HTML: %v", err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("report mode %v, want 0644", fi.Mode().Perm())
	}
	return string(b), doc
}

// --- a small DOM toolkit ---------------------------------------------------------------------------

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, c string) bool {
	for _, f := range strings.Fields(attr(n, "class")) {
		if f == c {
			return true
		}
	}
	return false
}

func find(n *html.Node, keep func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && keep(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func tag(name string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Data == name }
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

func cells(tr *html.Node) []*html.Node {
	var out []*html.Node
	for c := tr.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && (c.Data == "td" || c.Data == "th") {
			out = append(out, c)
		}
	}
	return out
}

// numberCell is what a number column may hold: a number with its unit, a
// band, a relative change, or nothing ("—").
var numberCell = regexp.MustCompile(`^(|—|exact|[-+]?[0-9.]+(e[-+]?[0-9]+)?%?|[-+]?[0-9.]+(e[-+]?[0-9]+)? [^ ]+|±[0-9.]+%|[≤≥] [0-9.]+ [^ ]+|\[[-0-9.e+]+, [-0-9.e+]+\] [^ ]+)$`)

// The failure tables fit the window: fixed layout at 100% width with a
// column for each header; number columns hold numbers (with their unit),
// never prose; the measured and expected values sit side by side with the
// band and how far off the reading is; the message has its own column and
// the paper section is named, its whole text in a tooltip.
func TestFailureTableLayout(t *testing.T) {
	page, doc := writeReport(t, makeRun(t), Options{})
	if !regexp.MustCompile(`table\.v[^{]*\{[^}]*width: 100%; table-layout: fixed;`).MatchString(page) {
		t.Error("verdict tables are not fixed-layout at 100% width: long messages would widen them past the window")
	}
	var failures *html.Node
	for _, s := range find(doc, tag("section")) {
		if attr(s, "id") == "failures" {
			failures = s
		}
	}
	if failures == nil {
		t.Fatal("no failures section")
	}
	tables := find(failures, func(n *html.Node) bool { return n.Data == "table" && hasClass(n, "v") })
	if len(tables) == 0 {
		t.Fatal("no verdict table under Not passed")
	}
	rows := map[string][]string{} // "board test params" -> cell texts
	for _, tb := range tables {
		cols := find(tb, tag("col"))
		head := cells(find(tb, tag("tr"))[0])
		if len(cols) != len(head) {
			t.Errorf("%d columns declared, %d headers", len(cols), len(head))
		}
		var names []string
		numeric := map[int]bool{}
		for i, h := range head {
			names = append(names, text(h))
			if hasClass(h, "num") {
				numeric[i] = true
			}
		}
		if want := "Status Board Test case Measured Expected Band Off by Message Paper section"; strings.Join(names, " ") != want {
			t.Errorf("columns %q, want %q", strings.Join(names, " "), want)
		}
		for _, tr := range find(tb, tag("tr"))[1:] {
			cs := cells(tr)
			if len(cs) != len(head) {
				t.Errorf("a row has %d cells for %d columns", len(cs), len(head))
				continue
			}
			var texts []string
			for i, c := range cs {
				texts = append(texts, text(c))
				if numeric[i] && hasClass(c, "num") && !numberCell.MatchString(text(c)) {
					t.Errorf("number column %s holds %q", names[i], text(c))
				}
			}
			rows[texts[1]+" "+texts[2]] = texts
		}
	}
	get := func(key string) []string {
		for k, r := range rows {
			if strings.HasPrefix(k, key) {
				return r
			}
		}
		t.Fatalf("no failure row %q (rows: %v)", key, rows)
		return nil
	}
	// A reading outside its band: both numbers, the band, how far off.
	r := get("exa-10 bandwidth path=router payload=64")
	if r[3] != "0.816 Gb/s" || r[4] != "1.6 Gb/s" || r[5] != "±10%" || r[6] != "-49.0%" || r[7] != "band: 2% paper rounding + 1 cycle per packet" || r[8] != "ExaNet §4.3, Fig. 9" {
		t.Errorf("out-of-band row = %q", r)
	}
	// No reading: the measured column says so in a dash, the prose goes to
	// the message, the expectation's human form is read back as numbers.
	r = get("exa-00 bandwidth link=exa-00:sfp0 path=link payload=512")
	if r[3] != "—" || r[4] != "9.014 Gb/s" || r[5] != "±3.41%" || !strings.HasPrefix(r[7], "0 of 2000 packets consumed") || r[8] != "ExaNet §4.3, Fig. 10" {
		t.Errorf("no-reading row = %q", r)
	}
	// A traced path: short text values side by side, no message repeating
	// them.
	r = get("exa-00 dor_path dst=1,1,0 src=0,0,0")
	if r[3] != "(0,0,0)-vc1->(0,1,0)-vc1->(1,1,0)" || r[4] != "(0,0,0)-vc1->(1,0,0)-vc1->(1,1,0)" || r[7] != "" {
		t.Errorf("traced path row = %q", r)
	}
	// An infrastructure error: its class and message, escaped.
	r = get("exa-11 links")
	if r[0] != "ERROR infrastructure" || r[7] != "exa-11 did not answer <script>" {
		t.Errorf("error row = %q", r)
	}
	if strings.Contains(page, "did not answer <script>") {
		t.Error("a message was not escaped")
	}
	// The whole source is the paper cell's tooltip.
	if !strings.Contains(page, `title="ExaNet §4.3, Fig. 9: 76% of the 20 Gb/s peak"`) {
		t.Error("the paper section cell lacks the source's whole text")
	}
	// Failures come before any passed case.
	if iFail, iPass := strings.Index(page, `id="failures"`), strings.Index(page, ">PASS<"); iFail < 0 || iPass < 0 || iFail > iPass {
		t.Errorf("failures at %d, first pass at %d: failures must come first", iFail, iPass)
	}
	// The wide band's reason is shown with the passed RTT cases.
	if !strings.Contains(page, "wide: the paper gives an upper bound only") {
		t.Error("a wide band's reason is not shown")
	}
}

// Each plan has a section with the figures its design describes: human
// titles, an embedded SVG each with a golden band and a series that moves;
// a counter that stayed at zero is one line of a table, not a plot; a
// design that describes nothing says so.
func TestPlanSectionsDrawDescribedFigures(t *testing.T) {
	dir := makeRun(t)
	page, doc := writeReport(t, dir, Options{})
	var mesh, other *html.Node
	for _, s := range find(doc, tag("section")) {
		switch attr(s, "id") {
		case "plan-mesh":
			mesh = s
		case "plan-other":
			other = s
		}
	}
	if mesh == nil || other == nil {
		t.Fatalf("plan sections missing (mesh %v, other %v)", mesh != nil, other != nil)
	}
	if h := text(find(mesh, tag("h2"))[0]); h != "mesh: ExaNet 2x2 mesh" {
		t.Errorf("mesh section titled %q", h)
	}
	titles := map[string]bool{}
	for _, f := range find(mesh, tag("figure")) {
		h := find(f, tag("h4"))
		img := find(f, tag("img"))
		if len(h) != 1 || text(h[0]) == "" || len(img) != 1 || attr(img[0], "alt") != text(h[0]) {
			t.Errorf("a figure without a title or image")
			continue
		}
		titles[text(h[0])] = true
		if strings.Contains(text(h[0]), "exanet.") {
			t.Errorf("figure titled with a raw metric name: %q", text(h[0]))
		}
		src, ok := strings.CutPrefix(attr(img[0], "src"), "data:image/svg+xml;base64,")
		if !ok {
			t.Fatalf("plot %s is not an embedded SVG", text(h[0]))
		}
		svg, err := base64.StdEncoding.DecodeString(src)
		if err != nil {
			t.Fatalf("plot %s: %v", text(h[0]), err)
		}
		if err := wellFormed(svg); err != nil || !bytes.Contains(svg, []byte("<svg")) {
			t.Errorf("plot %s is not a well-formed SVG: %v", text(h[0]), err)
		}
	}
	for _, want := range []string{"Bandwidth vs payload", "Round-trip latency vs payload, per hop count",
		"Round-trip latency distribution (hops 1)", "Round-trip latency distribution (hops 2)"} {
		if !titles[want] {
			t.Errorf("no figure %q (figures: %v)", want, titles)
		}
	}
	if len(find(other, tag("figure"))) != 0 || !strings.Contains(text(other), "describes none") {
		t.Error("a design without a report: block must say so, and draw nothing")
	}
	// The zero counter: a line of the readings table.
	var zero bool
	for _, tr := range find(mesh, tag("tr")) {
		if c := cells(tr); len(c) == 4 && strings.HasPrefix(text(c[0]), "exanet.link.crc_errors") && text(c[2]) == "all 0" && text(c[1]) == "4" {
			zero = true
		}
	}
	if !zero {
		t.Error("the all-zero counter is not one line of the readings table")
	}
	if strings.Contains(page, "src=\"http") || strings.Contains(page, "<link ") {
		t.Error("the report refers to something outside itself")
	}

	// What the figures hold: every series moves, has readings and a
	// golden band.
	d, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	v := newView(d, Options{})
	for _, p := range v.plans {
		pf, err := v.figures(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range pf.figs {
			if f.Title == "" || len(f.Series) == 0 {
				t.Errorf("figure %q has no title or no series", f.Title)
			}
			moves := false
			for _, s := range f.Series {
				moves = moves || s.Max > s.Min
				if s.Readings == 0 || s.Golden == 0 {
					t.Errorf("figure %q series %q: %d readings, %d golden", f.Title, s.Name, s.Readings, s.Golden)
				}
			}
			if !moves {
				t.Errorf("figure %q is flat", f.Title)
			}
		}
	}
}

// A described figure whose readings are all one value becomes a line, and
// a described metric without readings is named, not drawn empty.
func TestFlatAndMissingFigures(t *testing.T) {
	desc := &bitstreams.Report{Title: "Flat", Metrics: []bitstreams.ReportMetric{{Name: "f.credits", Title: "Credits"}, {Name: "f.absent", Title: "Absent"}},
		Figures: []bitstreams.ReportFigure{{Title: "Credits vs payload", Metric: "f.credits", X: "payload", Golden: "f.credits"}, {Title: "Nothing here", Metric: "f.absent", X: "payload"}}}
	root := t.TempDir()
	d, _ := results.Create(root, results.Run{Lab: "lab", Plans: []string{"flat"}})
	for _, pl := range []string{"32", "64", "128"} {
		m := results.Measurement{Plan: "flat", Test: "credits", Board: "b", Metric: "f.credits", Params: results.Params{"payload": pl}, Value: 1024, Unit: "words"}
		e := results.Expectation{Metric: "f.credits", Params: m.Params, Value: 1024, Unit: "words", Source: "S §1"}
		d.AddMeasurement(m)
		d.AddExpectation(m.Test, m.Board, e)
		d.AddVerdict(results.Score(m, e))
	}
	d.Finish("passed", 0)
	page, doc := writeReport(t, d.Path, Options{Procedures: map[string]*bitstreams.Report{"flat": desc}})
	if n := len(find(doc, tag("figure"))); n != 0 {
		t.Errorf("%d figures drawn of flat or absent readings", n)
	}
	for _, want := range []string{"Credits vs payload: every one of 3 readings is 1024 words", "No readings in this run for: Nothing here", "all 1024 words"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func TestCompareSection(t *testing.T) {
	dir := makeRun(t)
	cmp := &compare.Result{Baselines: map[string]compare.RunRef{"mesh": {ID: "previous-run"}}, OnlyBefore: []string{"gone"},
		Moved:    []compare.Change{{Plan: "mesh", Test: "bandwidth", Board: "exa-10", Metric: "exanet.bandwidth", Params: results.Params{"payload": "64"}, A: 1.6, B: 0.8, Rel: -0.5, Threshold: 0.05, Better: "worse", Unit: "Gb/s"}},
		NewFails: []compare.VerdictChange{{Plan: "mesh", Test: "bandwidth", Board: "exa-10", Was: results.Pass, Now: results.Fail}}}
	if err := compare.Save(dir, cmp); err != nil {
		t.Fatal(err)
	}
	page, _ := writeReport(t, dir, Options{Notes: []string{"InfluxDB: 90 points sent"}})
	for _, want := range []string{"previous-run", "-50.0%", "1 worse, 0 better", ">Bandwidth<", "Plans in the earlier run but not in this one: gone", "InfluxDB: 90 points sent"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// A section added through Options comes after the plans' sections and is
// listed in the contents.
func TestExtraSection(t *testing.T) {
	dir := makeRun(t)
	extra := func(v *View) ([]Section, error) {
		return []Section{{ID: "campaign", Title: "Faults campaign", Body: "<p>caught 3 of 3</p>"}}, nil
	}
	page, _ := writeReport(t, dir, Options{Sections: []SectionFunc{extra}})
	iPlan, iExtra, iPassed := strings.Index(page, `id="plan-other"`), strings.Index(page, `id="campaign"`), strings.Index(page, `id="passed"`)
	if !(iPlan < iExtra && iExtra < iPassed) || !strings.Contains(page, `<a href="#campaign">Faults campaign</a>`) {
		t.Errorf("extra section at %d, plans at %d, passed at %d", iExtra, iPlan, iPassed)
	}
}

func wellFormed(b []byte) error {
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	for {
		_, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func TestReportOfEmptyRun(t *testing.T) {
	root := t.TempDir()
	d, _ := results.Create(root, results.Run{Lab: "lab"})
	d.Close()
	page, _ := writeReport(t, d.Path, Options{})
	if !strings.Contains(page, "Every verdict passed") || !strings.Contains(page, "Not passed (0)") {
		t.Error("empty run report")
	}
}

func TestReadExpectationsToleratesCrashCut(t *testing.T) {
	dir := t.TempDir()
	good, _ := json.Marshal(Expected{Test: "t", Board: "b", Expectation: results.Expectation{Metric: "m", Value: 1, Source: "S §1"}})
	os.WriteFile(filepath.Join(dir, results.ExpectationsFile), append(append(good, '\n'), []byte(`{"test":"t","bo`)...), 0o644)
	es, err := ReadExpectations(dir)
	if err != nil || len(es) != 1 || es[0].Metric != "m" || es[0].Source != "S §1" {
		t.Errorf("ReadExpectations: %+v, %v", es, err)
	}
	os.WriteFile(filepath.Join(dir, results.ExpectationsFile), append([]byte("{bad}\n"), good...), 0o644)
	if _, err := ReadExpectations(dir); err == nil || !strings.Contains(err.Error(), ":1:") {
		t.Errorf("bad line: %v, want an error naming line 1", err)
	}
}

func FuzzDecodeExpectations(f *testing.F) {
	f.Add([]byte(`{"test":"t","board":"b","metric":"m","value":1,"min":0,"source":"x"}` + "\n"))
	f.Add([]byte("{}\n{"))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := DecodeExpectations(bytes.NewReader(data), "fuzz")
		if err != nil && !strings.HasPrefix(err.Error(), "fuzz:") {
			t.Fatalf("error without the file name: %v", err)
		}
		for _, e := range es {
			e.Bounds()
			e.Describe()
		}
	})
}

// A run finished, then resumed half a day later for a minute, took eleven
// minutes of work, not half a day.
func TestReportDurationOfAResumedRun(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC)
	end1, end2 := t0.Add(10*time.Minute), t0.Add(12*time.Hour+time.Minute)
	root := t.TempDir()
	d, err := results.Create(root, results.Run{Lab: "lab", Start: t0, End: &end2, Resumes: 1,
		Sessions: []results.Session{{Start: t0, End: &end1}, {Start: t0.Add(12 * time.Hour), End: &end2}}})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	page, _ := writeReport(t, d.Path, Options{})
	if !strings.Contains(page, "took 11m0s of work in 2 sessions") {
		i := strings.Index(page, "Started")
		t.Errorf("the report's duration of a resumed run: %q", page[i:min(len(page), i+160)])
	}
}
