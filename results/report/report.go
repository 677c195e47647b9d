// Package report renders a run directory as one self-contained HTML file
// (report.html): the verdicts, failures first, with measured and expected
// values, tolerance and paper section; plots of every metric against its
// golden curve (bandwidth versus payload, round-trip latency versus size
// per hop count, latency distributions); and what changed since the
// previous run. Plots are drawn with gonum.org/v1/plot and embedded as SVG
// data URIs, so the file opens anywhere, offline, on its own.
package report

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/compare"
)

// File is the report's name inside a run directory.
const File = "report.html"

// Expected is one line of expectations.jsonl: the expectation a
// measurement was scored against, with the test and board it was used for.
type Expected struct {
	Test  string `json:"test"`
	Board string `json:"board"`
	results.Expectation
}

// ReadExpectations reads expectations.jsonl. A last line cut short by a
// crash is ignored; any other bad line is an error naming its line.
func ReadExpectations(dir string) ([]Expected, error) {
	f, err := os.Open(filepath.Join(dir, results.ExpectationsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return DecodeExpectations(f, filepath.Join(dir, results.ExpectationsFile))
}

// DecodeExpectations reads expectation lines from r (name is used in
// errors).
func DecodeExpectations(r io.Reader, name string) ([]Expected, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var out []Expected
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var e Expected
			if uerr := json.Unmarshal(line, &e); uerr != nil {
				if line[len(line)-1] != '\n' {
					return out, nil // cut short by a crash while being written
				}
				return out, fmt.Errorf("%s:%d: %w", name, n, uerr)
			}
			out = append(out, e)
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("%s: %w", name, err)
		}
	}
}

// Data is what a report shows.
type Data struct {
	Dir          string
	Run          results.Run
	Measurements []results.Measurement
	Verdicts     []results.Verdict
	Expectations []Expected
	Compare      *compare.Result
}

// Load reads a run directory (and its compare.json when there is one).
func Load(dir string) (*Data, error) {
	run, err := results.ReadRun(dir)
	if err != nil {
		return nil, err
	}
	d := &Data{Dir: dir, Run: *run}
	if d.Measurements, err = results.ReadMeasurements(dir); err != nil {
		return nil, err
	}
	if d.Verdicts, err = results.ReadVerdictLog(dir); err != nil {
		return nil, err
	}
	if d.Expectations, err = ReadExpectations(dir); err != nil {
		return nil, err
	}
	if d.Compare, err = compare.Read(dir); err != nil {
		return nil, err
	}
	return d, nil
}

// Options add to what the run directory says.
type Options struct {
	// Notes are shown under the run's header (the nightly adds the
	// InfluxDB export's outcome).
	Notes []string
	// MaxCDFs bounds the distribution plots (default 12).
	MaxCDFs int
}

// Write renders dir's report into dir/report.html (atomically) and returns
// its path.
func Write(dir string, opts Options) (string, error) {
	d, err := Load(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := Render(&b, d, opts); err != nil {
		return "", err
	}
	path := filepath.Join(dir, File)
	if err := results.WriteFileAtomic(path, []byte(b.String())); err != nil {
		return "", err
	}
	// A report is for people (and web servers) to read.
	if err := os.Chmod(path, 0o644); err != nil {
		return "", err
	}
	return path, nil
}

type row struct {
	Status, Plan, Board, Name, Metric     string
	Measured, Expected, Tolerance, Source string
	Message                               string
}

type figure struct {
	Title, Caption string
	Src            template.URL
}

type page struct {
	Run         results.Run
	Title       string
	Duration    string
	Summary     results.Summary
	Notes       []string
	Bad, Good   []row
	Figures     []figure
	Compare     *compare.Result
	Baselines   []string
	Moved       []moved
	Generated   string
	PlotCount   int
	VerdictNote string
}

type moved struct {
	Plan, Board, Name, Metric, A, B, Rel, Threshold, Better string
}

// Render writes the report of d to w.
func Render(w io.Writer, d *Data, opts Options) error {
	if opts.MaxCDFs <= 0 {
		opts.MaxCDFs = 12
	}
	pg := page{Run: d.Run, Summary: results.Summarize(d.Verdicts), Notes: opts.Notes, Compare: d.Compare,
		Generated: time.Now().UTC().Format(time.RFC3339)}
	pg.Title = fmt.Sprintf("labrunner run %s", d.Run.ID)
	if d.Run.End != nil {
		pg.Duration = d.Run.End.Sub(d.Run.Start).Round(time.Millisecond).String()
	}
	for _, v := range results.SortVerdicts(d.Verdicts) {
		r := row{Status: string(v.Status), Plan: v.Plan, Board: v.Board, Name: v.Name(), Metric: v.Metric,
			Expected: v.Expected, Source: v.Source, Message: v.Message}
		switch {
		case v.MeasuredText != "" && v.Measured == nil:
			r.Measured = v.MeasuredText
		case v.Measured != nil:
			r.Measured = strings.TrimSpace(fmt.Sprintf("%.6g %s", *v.Measured, v.Unit))
		}
		if v.Tolerance != nil {
			r.Tolerance = strings.TrimSpace(fmt.Sprintf("±%.3g %s", *v.Tolerance, v.Unit))
		}
		if v.ExpectedValue != nil {
			// The tolerance has its own column.
			r.Expected = strings.TrimSpace(fmt.Sprintf("%.6g %s", *v.ExpectedValue, v.Unit))
		}
		if v.Status == results.Fail && v.Class == "design" && v.Measured != nil {
			// Measured, expected and source say it all already.
			r.Message = ""
		}
		if v.Status == results.Pass {
			r.Message = ""
			pg.Good = append(pg.Good, r)
		} else {
			pg.Bad = append(pg.Bad, r)
		}
	}

	specs := planCurves(d.Measurements)
	for _, s := range specs {
		f, err := curveFigure(s, d.Measurements, d.Expectations)
		if err != nil {
			return err
		}
		if f != nil {
			pg.Figures = append(pg.Figures, embed(f))
		}
	}
	cdfs, err := cdfFigures(specs, d.Measurements, opts.MaxCDFs)
	if err != nil {
		return err
	}
	for _, f := range cdfs {
		pg.Figures = append(pg.Figures, embed(f))
	}
	pg.PlotCount = len(pg.Figures)

	if c := d.Compare; c != nil {
		for _, plan := range sortedKeys(c.Baselines) {
			pg.Baselines = append(pg.Baselines, fmt.Sprintf("%s: %s", plan, c.Baselines[plan].ID))
		}
		for _, m := range c.Moved {
			pg.Moved = append(pg.Moved, moved{Plan: m.Plan, Board: m.Board, Name: results.Verdict{Test: m.Test, Params: m.Params}.Name(),
				Metric: m.Metric, A: num(m.A, m.Unit), B: num(m.B, m.Unit), Rel: compare.FormatRel(m.Rel),
				Threshold: fmt.Sprintf("±%g%%", m.Threshold*100), Better: m.Better})
		}
	}
	return tmpl.Execute(w, pg)
}

func num(v float64, unit string) string {
	if math.IsNaN(v) {
		return "NaN"
	}
	return strings.TrimSpace(fmt.Sprintf("%.6g %s", v, unit))
}

func embed(f *Figure) figure {
	return figure{Title: f.Title, Caption: f.Caption,
		Src: template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(f.SVG))}
}

func statusClass(s string) string { return "st-" + s }

func join(xs []string) string { sort.Strings(xs); return strings.Join(xs, ", ") }

var tmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"statusClass": statusClass, "join": join, "upper": strings.ToUpper,
	"time": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: "Liberation Sans", "DejaVu Sans", Arial, sans-serif; margin: 24px; color: #222; background: #fafafa; }
h1 { font-size: 22px; margin: 0 0 6px 0; }
h2 { font-size: 18px; margin: 28px 0 8px 0; border-bottom: 1px solid #ccc; padding-bottom: 4px; }
table { border-collapse: collapse; font-size: 13px; background: #fff; }
th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #eee; position: sticky; top: 0; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
.badge { display: inline-block; padding: 2px 10px; border-radius: 10px; color: #fff; font-weight: bold; }
.st-pass { color: #1a7f37; font-weight: bold; } .st-fail { color: #c62828; font-weight: bold; }
.st-error { color: #b26a00; font-weight: bold; } .st-skip { color: #777; }
.b-passed { background: #1a7f37; } .b-failed { background: #c62828; } .b-other { background: #b26a00; }
.meta td { border: none; padding: 1px 10px 1px 0; } .meta { background: none; }
.figs { display: flex; flex-wrap: wrap; gap: 16px; }
.fig { background: #fff; border: 1px solid #ddd; padding: 8px; width: 640px; }
.fig img { width: 632px; height: auto; display: block; }
.cap { font-size: 12px; color: #555; margin-top: 4px; }
.msg { max-width: 520px; font-size: 12px; color: #444; }
.src { max-width: 340px; font-size: 11px; color: #555; }
.toc { font-size: 14px; } .toc a { color: #1f5fa8; }
.worse { color: #c62828; font-weight: bold; } .better { color: #1a7f37; }
.note { background: #fff8e1; border: 1px solid #f0d98c; padding: 6px 10px; margin: 6px 0; font-size: 13px; }
details summary { cursor: pointer; margin: 8px 0; }
</style>
</head>
<body>
<h1>{{.Title}}
{{if eq .Run.Status "passed"}}<span class="badge b-passed">passed</span>{{else if eq .Run.Status "failed"}}<span class="badge b-failed">failed</span>{{else}}<span class="badge b-other">{{.Run.Status}}</span>{{end}}
</h1>
<table class="meta">
<tr><td>Lab</td><td>{{.Run.Lab}} ({{.Run.LabFile}})</td></tr>
<tr><td>Plans</td><td>{{join .Run.Plans}}</td></tr>
<tr><td>Started</td><td>{{time .Run.Start}}{{if .Duration}}, took {{.Duration}}{{end}}</td></tr>
<tr><td>Host, seed</td><td>{{.Run.Host}}, {{.Run.Seed}}</td></tr>
{{if .Run.Faults}}<tr><td>Injected faults</td><td>{{join .Run.Faults}}</td></tr>{{end}}
<tr><td>Verdicts</td><td>{{.Summary.Total}} test cases: <span class="st-pass">{{.Summary.Pass}} passed</span>, <span class="st-fail">{{.Summary.Fail}} failed</span>, <span class="st-error">{{.Summary.Error}} errors</span>, <span class="st-skip">{{.Summary.Skip}} skipped</span></td></tr>
<tr><td>Exit code</td><td>{{.Run.ExitCode}}</td></tr>
</table>
{{range .Notes}}<div class="note">{{.}}</div>{{end}}
<p class="toc">{{if .Compare}}<a href="#compare">Since the previous run</a> · {{end}}<a href="#failures">Not passed ({{len .Bad}})</a> · <a href="#plots">Plots ({{.PlotCount}})</a> · <a href="#passed">Passed ({{len .Good}})</a> · <a href="#bitstreams">Bitstreams</a></p>

{{if .Compare}}
<h2 id="compare">Since the previous run</h2>
{{if .Baselines}}<p>Compared with {{join .Baselines}} ({{.Compare.Compared}} metrics in both runs).</p>{{end}}
{{if .Compare.NoBaseline}}<p>No earlier run for plans {{join .Compare.NoBaseline}}.</p>{{end}}
{{if .Moved}}
<table>
<tr><th>Plan</th><th>Board</th><th>Test case</th><th>Metric</th><th>Before</th><th>Now</th><th>Change</th><th>Threshold</th><th></th></tr>
{{range .Moved}}<tr><td>{{.Plan}}</td><td>{{.Board}}</td><td>{{.Name}}</td><td>{{.Metric}}</td><td class="num">{{.A}}</td><td class="num">{{.B}}</td><td class="num {{.Better}}">{{.Rel}}</td><td class="num">{{.Threshold}}</td><td class="{{.Better}}">{{.Better}}</td></tr>
{{end}}</table>
{{else if .Baselines}}<p>No metric moved beyond its threshold.</p>{{end}}
{{if .Compare.NewFails}}<h3>New failures ({{len .Compare.NewFails}})</h3>
<table><tr><th>Plan</th><th>Board</th><th>Test case</th><th>Was</th><th>Now</th><th>Measured</th><th>Expected</th><th>Message</th></tr>
{{range .Compare.NewFails}}<tr><td>{{.Plan}}</td><td>{{.Board}}</td><td>{{.Name}}</td><td>{{if .Was}}{{.Was}}{{else}}(new){{end}}</td><td class="{{statusClass (printf "%s" .Now)}}">{{.Now}}</td><td class="num">{{.Measured}}</td><td>{{.Expected}}</td><td class="msg">{{.Message}}</td></tr>
{{end}}</table>{{end}}
{{if .Compare.Fixed}}<h3>Fixed ({{len .Compare.Fixed}})</h3>
<table><tr><th>Plan</th><th>Board</th><th>Test case</th><th>Was</th><th>Now</th></tr>
{{range .Compare.Fixed}}<tr><td>{{.Plan}}</td><td>{{.Board}}</td><td>{{.Name}}</td><td>{{.Was}}</td><td class="st-pass">{{.Now}}</td></tr>
{{end}}</table>{{end}}
{{end}}

<h2 id="failures">Verdicts that did not pass ({{len .Bad}})</h2>
{{if .Bad}}
<table>
<tr><th>Status</th><th>Plan</th><th>Board</th><th>Test case</th><th>Measured</th><th>Expected</th><th>Tolerance</th><th>Paper section / source</th><th>Message</th></tr>
{{range .Bad}}<tr><td class="{{statusClass .Status}}">{{upper .Status}}</td><td>{{.Plan}}</td><td>{{.Board}}</td><td>{{.Name}}</td><td class="num">{{.Measured}}</td><td>{{.Expected}}</td><td class="num">{{.Tolerance}}</td><td class="src">{{.Source}}</td><td class="msg">{{.Message}}</td></tr>
{{end}}</table>
{{else}}<p>Every verdict passed.</p>{{end}}

<h2 id="plots">Plots ({{.PlotCount}})</h2>
<p id="plotcheck" class="cap"></p>
<div class="figs">
{{range .Figures}}<div class="fig"><img class="plot" alt="{{.Title}}" src="{{.Src}}">{{if .Caption}}<div class="cap">{{.Caption}}</div>{{end}}</div>
{{end}}</div>

<h2 id="passed">Passed ({{len .Good}})</h2>
<details><summary>Show the {{len .Good}} passed test cases</summary>
<table>
<tr><th>Status</th><th>Plan</th><th>Board</th><th>Test case</th><th>Measured</th><th>Expected</th><th>Tolerance</th><th>Paper section / source</th></tr>
{{range .Good}}<tr><td class="st-pass">PASS</td><td>{{.Plan}}</td><td>{{.Board}}</td><td>{{.Name}}</td><td class="num">{{.Measured}}</td><td>{{.Expected}}</td><td class="num">{{.Tolerance}}</td><td class="src">{{.Source}}</td></tr>
{{end}}</table>
</details>

<h2 id="bitstreams">Bitstreams</h2>
<table>
<tr><th>Board</th><th>Kind</th><th>Plan</th><th>Design</th><th>Version</th><th>Part</th><th>sha256</th></tr>
{{range .Run.Bitstreams}}<tr><td>{{.Board}}</td><td>{{.Kind}}</td><td>{{.Plan}}</td><td>{{.Design}}</td><td>{{.Version}}</td><td>{{.Part}}</td><td><code>{{.SHA256}}</code></td></tr>
{{end}}</table>
<p class="cap">Report generated {{.Generated}} by labrunner{{range $k, $v := .Run.Versions}} · {{$k}} {{$v}}{{end}}.</p>
<script>
// Tells scripts/check-report.sh (and a reader) that every plot decoded.
window.addEventListener('load', function () {
  var imgs = document.querySelectorAll('img.plot'), ok = 0;
  for (var i = 0; i < imgs.length; i++) { if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++; }
  document.body.setAttribute('data-plots', ok + '/' + imgs.length);
  document.getElementById('plotcheck').textContent = ok + ' of ' + imgs.length + ' plots rendered.';
});
</script>
</body>
</html>
`))
