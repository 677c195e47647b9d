package bands

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/report"
)

func exp(test, board string, e results.Expectation) report.Expected {
	return report.Expected{Test: test, Board: board, Expectation: e}
}

func TestBandsAndOffenders(t *testing.T) {
	p := results.Params{"payload": "64"}
	exps := []report.Expected{
		exp("bw", "a", results.Expectation{Metric: "x.bw", Params: p, Value: 10, RelTol: 0.05, Budget: "replica spread 2%, quantisation 1%"}),
		exp("bw", "b", results.Expectation{Metric: "x.bw", Params: p, Value: 10, RelTol: 0.05, Budget: "replica spread 2%, quantisation 1%"}),
		exp("rtt", "a", results.Expectation{Metric: "x.rtt", Value: 100, RelTol: 0.2}),
		exp("rtt", "a", results.Expectation{Metric: "x.rtt", Params: results.Params{"load": "0.2"}, Value: 100, RelTol: 0.2, Wide: "queueing at load 0.2: replica spread 18% at 200 packets"}),
		exp("queue", "a", results.Expectation{Metric: "x.queue", Min: results.Float(0), Max: results.Float(8)}),
		exp("path", "a", results.Expectation{Metric: "x.path", Text: "a->b"}),
	}
	vs := []results.Verdict{
		{Plan: "mesh", Test: "bw", Board: "a", Metric: "x.bw", Params: p},
		{Plan: "mesh", Test: "rtt", Board: "a", Metric: "x.rtt"},
	}
	bs := FromExpectations(exps, vs)
	if len(bs) != 4 {
		t.Fatalf("%d bands, want 4 (the two boards' bandwidth bands are one, the text one has none): %+v", len(bs), bs)
	}
	byMetric := map[string]Band{}
	for _, b := range bs {
		byMetric[results.Key(b.Metric, b.Params)] = b
	}
	bw := byMetric["x.bw{payload=64}"]
	if bw.Plan != "mesh" || len(bw.Boards) != 2 || bw.Offender || bw.NeedsReason || math.Abs(bw.Below-0.05) > 1e-12 {
		t.Errorf("bandwidth band: %+v", bw)
	}
	if r := byMetric["x.rtt"]; !r.Offender || r.Plan != "mesh" {
		t.Errorf("±20%% without a reason is not an offender: %+v", r)
	}
	if r := byMetric["x.rtt{load=0.2}"]; r.Offender || !r.NeedsReason {
		t.Errorf("±20%% with a reason: %+v", r)
	}
	// [0, 8] around its middle: ±100%, a floor of 0 for a queue bound.
	if q := byMetric["x.queue"]; !q.Offender || q.Below < 0.99 {
		t.Errorf("one-sided bound from 0: %+v", q)
	}
	off := Offenders(bs)
	if len(off) != 2 {
		t.Fatalf("%d offenders, want 2", len(off))
	}
	if d := off[0].Describe(); !strings.Contains(d, "Wide reason") || !strings.Contains(d, "x.") {
		t.Errorf("offender description %q", d)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, bs); err != nil {
		t.Fatal(err)
	}
	if s := buf.String(); !strings.Contains(s, "4 bands, 2 wider than ±10%") || strings.Count(s, "\n!") != 2 {
		t.Errorf("table:\n%s", s)
	}
	// An open side is null in JSON.
	open := Band{Metric: "m", Below: 0.1, Above: math.Inf(1)}
	b, err := json.Marshal(open)
	if err != nil || !strings.Contains(string(b), `"above":null`) || !strings.Contains(string(b), `"below":0.1`) {
		t.Errorf("JSON %s (%v)", b, err)
	}
}
