package report

import (
	"fmt"
	"html/template"
	"sort"
	"strings"

	"github.com/labrunner/labrunner/results"
)

// Two sections a caller adds with Options.Sections: the harness's bus
// counters per plan and board (what a noisy or lossy line cost, benign
// faults included), and the fault campaign when the run directory holds one
// (campaign.json: the run was the campaign's baseline).

// harnessPrefix is the metric prefix of the runner's bus counters
// (selftest.HarnessTest).
const harnessPrefix = "harness.bridge."

// harnessCols are the counters shown, in order; the others stay in
// measurements.jsonl and InfluxDB.
var harnessCols = []string{"requests", "retries", "resends", "timeouts", "late", "crc_errors", "bad_headers", "stale", "busy", "failures", "split_bursts", "turnaround_ms"}

// harnessRow is one plan and board's bus counters.
type harnessRow struct {
	Plan, Board string
	Values      []string // in harnessCols order, "" for a counter not recorded
	Moved       bool     // a counter of trouble (retries, errors) is not 0
}

func harnessRows(ms []results.Measurement) []harnessRow {
	type key struct{ plan, board string }
	vals := map[key]map[string]float64{}
	for _, m := range ms {
		if !strings.HasPrefix(m.Metric, harnessPrefix) {
			continue
		}
		k := key{m.Plan, m.Board}
		if vals[k] == nil {
			vals[k] = map[string]float64{}
		}
		vals[k][strings.TrimPrefix(m.Metric, harnessPrefix)] = m.Value
	}
	var out []harnessRow
	for k, v := range vals {
		r := harnessRow{Plan: k.plan, Board: k.board}
		for _, c := range harnessCols {
			x, ok := v[c]
			switch {
			case !ok:
				r.Values = append(r.Values, "")
			case c == "turnaround_ms":
				r.Values = append(r.Values, fmt.Sprintf("%.3g", x))
			default:
				r.Values = append(r.Values, fmt.Sprintf("%.0f", x))
				if c != "requests" && x != 0 {
					r.Moved = true
				}
			}
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Plan != out[j].Plan {
			return out[i].Plan < out[j].Plan
		}
		return out[i].Board < out[j].Board
	})
	return out
}

// HarnessSection shows the bus counters of the run's boards.
func HarnessSection(v *View) ([]Section, error) {
	rows := harnessRows(v.Data.Measurements)
	if len(rows) == 0 {
		return nil, nil
	}
	body, err := ExecuteSection(extraTmpl, "harness", struct {
		Cols []string
		Rows []harnessRow
	}{harnessCols, rows})
	return []Section{{ID: "harness", Title: fmt.Sprintf("Harness: bus counters (%d boards)", len(rows)), Body: body}}, err
}

// CampaignSection shows the fault campaign the run was the baseline of.
func CampaignSection(v *View) ([]Section, error) {
	c, err := results.ReadCampaign(v.Data.Dir)
	if err != nil || c == nil {
		return nil, err
	}
	body, err := ExecuteSection(extraTmpl, "campaign", c)
	return []Section{{ID: "campaign", Title: fmt.Sprintf("Fault campaign (%d faults)", len(c.Entries)), Body: body}}, err
}

var extraTmpl = template.Must(template.New("extra").Funcs(template.FuncMap{
	"join": func(xs []string) string { return strings.Join(xs, ", ") },
}).Parse(`{{define "harness"}}<p class="cap">The UART bridge's counters per plan and board (harness.bridge.* in measurements.jsonl and
InfluxDB): what the line cost the run. A benign fault of the line passes every verdict and shows here: retries, re-requests of
damaged answers (resends), timeouts, late answers, CRC errors. Rows where one of them moved are marked.</p>
<table>
<tr><th></th><th>Plan</th><th>Board</th>{{range .Cols}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><td>{{if .Moved}}<span class="st-error">●</span>{{end}}</td><td>{{.Plan}}</td><td>{{.Board}}</td>{{range .Values}}<td class="num">{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}
{{define "campaign"}}<p>The plans {{join .Plans}} ran once without a fault (this run) and once per fault and target in {{.Rounds}} rounds
(targets: {{.Targets}}, night {{.Night}}), in {{printf "%.0f" .WallSeconds}} s. Caught: the fault's plans did not pass;
escaped: every verdict passed; a benign fault must pass (absorbed) and show in the counters.</p>
<table>
<tr><th>Fault</th><th>Plans</th><th>Exit</th><th>Outcome</th><th>Class</th><th>Caught by</th><th>Trace</th><th>Wall</th></tr>
{{range .Entries}}<tr><td><code>{{.Fault}}</code></td><td>{{join .Plans}}</td><td class="num">{{.ExitCode}}</td><td class="{{if or (eq .Outcome "escaped") (eq .Outcome "false-alarm")}}st-fail{{else}}st-pass{{end}}">{{.Outcome}}</td><td>{{.Class}}</td><td>{{join .CaughtBy}}</td><td class="msg">{{join .Trace}}</td><td class="num">{{printf "%.1f" .WallSeconds}} s</td></tr>
{{end}}</table>{{end}}`))
