package report

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	stdhtml "html"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/compare"
)

// makeRun writes a run directory through results.Dir, as a nightly does:
// ExaNet bandwidth and RTT with golden expectations, RTT samples, and a
// metric of a design the report has no hint for.
func makeRun(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	d, err := results.Create(root, results.Run{Lab: "lab", Plans: []string{"mesh", "shoal"}, Start: time.Date(2026, 5, 1, 1, 0, 0, 0, time.UTC)})
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
				v = gold * 0.5 // the failure that must come first
			}
			score(results.Measurement{Plan: "mesh", Test: "bandwidth", Board: b, Design: "exanet", Metric: "exanet.bandwidth", Params: ps, Value: v, Unit: "Gb/s"},
				results.Expectation{Metric: "exanet.bandwidth", Params: ps, Value: gold, RelTol: 0.1, Unit: "Gb/s", Source: "ExaNet §4.3, Fig. 9"})
			for _, hops := range []string{"1", "2"} {
				ps := results.Params{"hops": hops, "payload": fmt.Sprint(pl), "peer": "exa-11"}
				g := 0.8 + float64(pl)/100
				score(results.Measurement{Plan: "mesh", Test: "latency", Board: b, Design: "exanet", Metric: "exanet.rtt", Params: ps, Value: g, Unit: "us",
					Samples: []float64{g * 0.98, g, g, g * 1.01, g * 1.05}},
					results.Expectation{Metric: "exanet.rtt", Params: results.Params{"hops": hops, "payload": fmt.Sprint(pl)}, Value: g, RelTol: 0.15, Unit: "us", Source: "ExaNet §4.2, Fig. 7/8"})
			}
		}
	}
	for _, load := range []string{"0.1", "0.5", "0.9"} {
		ps := results.Params{"load": load}
		score(results.Measurement{Plan: "shoal", Test: "latency", Board: "de5-0", Design: "shoal", Metric: "shoal.latency", Params: ps, Value: 2, Unit: "us"},
			results.Expectation{Metric: "shoal.latency", Params: ps, Min: results.Float(0), Max: results.Float(5), Source: "Shoal §5"})
	}
	d.AddVerdict(results.Verdict{Time: at, Plan: "mesh", Test: "links", Board: "exa-11", Status: results.Error, Class: "infrastructure", Message: "exa-11 did not answer <script>"})
	if err := d.Finish("failed", 1); err != nil {
		t.Fatal(err)
	}
	return d.Path
}

func TestReportShowsFailuresFirstAndEveryPlot(t *testing.T) {
	dir := makeRun(t)
	cmp := &compare.Result{Baselines: map[string]compare.RunRef{"mesh": {ID: "previous-run"}},
		Moved:    []compare.Change{{Plan: "mesh", Test: "bandwidth", Board: "exa-10", Metric: "exanet.bandwidth", Params: results.Params{"payload": "64"}, A: 1.6, B: 0.8, Rel: -0.5, Threshold: 0.05, Better: "worse", Unit: "Gb/s"}},
		NewFails: []compare.VerdictChange{{Plan: "mesh", Test: "bandwidth", Board: "exa-10", Was: results.Pass, Now: results.Fail}}}
	if err := compare.Save(dir, cmp); err != nil {
		t.Fatal(err)
	}
	path, err := Write(dir, Options{Notes: []string{"InfluxDB: 90 points sent"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	html := string(b)

	// Failures first: the failed bandwidth case and the error come before
	// any passed case, and the failed case shows measured, expected,
	// tolerance and paper section.
	iFail := strings.Index(html, "bandwidth[path=router,payload=64]")
	iPass := strings.Index(html, ">PASS<")
	if iFail < 0 || iPass < 0 || iFail > iPass {
		t.Errorf("failure at %d, first pass at %d: failures must come first", iFail, iPass)
	}
	for _, want := range []string{"0.816 Gb/s", "1.6 Gb/s", "±0.16 Gb/s", "ExaNet §4.3, Fig. 9", "exa-11 did not answer &lt;script&gt;",
		"previous-run", "-50.0%", "InfluxDB: 90 points sent", "Golden curve: ExaNet §4.2, Fig. 7/8"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(html, "<script>\"") || strings.Contains(html, "did not answer <script>") {
		t.Error("a message was not escaped")
	}
	// Plots: bandwidth, RTT, the Shoal metric without a hint, and one
	// CDF per hop count; each a valid SVG embedded in the page.
	imgs := regexp.MustCompile(`<img class="plot" alt="([^"]*)" src="([^"]+)"`).FindAllStringSubmatch(html, -1)
	titles := map[string]bool{}
	for _, m := range imgs {
		titles[stdhtml.UnescapeString(m[1])] = true
		src, ok := strings.CutPrefix(stdhtml.UnescapeString(m[2]), "data:image/svg+xml;base64,")
		if !ok {
			t.Fatalf("plot %s is not an embedded SVG", m[1])
		}
		svg, err := base64.StdEncoding.DecodeString(src)
		if err != nil {
			t.Fatalf("plot %s: %v", m[1], err)
		}
		if err := wellFormed(svg); err != nil || !bytes.Contains(svg, []byte("<svg")) {
			t.Errorf("plot %s is not a well-formed SVG: %v", m[1], err)
		}
	}
	for _, want := range []string{"ExaNet bandwidth vs payload", "ExaNet round-trip latency vs payload, per hop count", "shoal.latency",
		"exanet.rtt distribution (hops=1)", "exanet.rtt distribution (hops=2)"} {
		if !titles[want] {
			t.Errorf("no plot %q (plots: %v)", want, titles)
		}
	}
	if strings.Contains(html, "src=\"http") || strings.Contains(html, "<link ") {
		t.Error("the report refers to something outside itself")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("report mode %v, want 0644", fi.Mode().Perm())
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
	p, err := Write(d.Path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), "Every verdict passed") || !strings.Contains(string(b), "Plots (0)") {
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
