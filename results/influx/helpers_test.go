package influx

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/influx/influxtest"
)

// The shared server: InfluxDB 1.8 with Flux and authentication, started once
// for the package (its start takes several seconds with Flux on).
var (
	srv      *influxtest.Server
	srvToken string
)

const (
	testDB     = "labrunner"
	testBucket = "labrunner/autogen"
	testUser   = "admin"
	testPass   = "s3cret-Pa55word"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "influxd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv, err = influxtest.Start(dir, influxtest.Options{Flux: true, User: testUser, Password: testPass, Databases: []string{testDB}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting InfluxDB for the tests:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	srvToken = srv.Token()
	code := m.Run()
	srv.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// writeRun writes a run directory's files directly (results.Dir syncs each
// line, which is right for a run and too slow for a test making thousands).
func writeRun(t testing.TB, dir string, run results.Run, ms []results.Measurement, vs []results.Verdict) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	put := func(name string, each func(enc *json.Encoder)) {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		each(enc)
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put(results.RunFile, func(enc *json.Encoder) { enc.Encode(run) })
	put(results.MeasurementsFile, func(enc *json.Encoder) {
		for _, m := range ms {
			enc.Encode(m)
		}
	})
	put(results.VerdictsLogFile, func(enc *json.Encoder) {
		for _, v := range vs {
			enc.Encode(v)
		}
	})
	return dir
}

// syntheticRun makes a run of n bandwidth/latency measurements on four
// boards, each scored, plus the awkward cases: a text measurement with
// quotes and a line break, a NaN reading, two readings of one series in the
// same nanosecond, a parameter that clashes with a tag name, tag values
// with spaces, commas and equals signs, a verdict without a measurement.
func syntheticRun(t testing.TB, root, id string, n int, start time.Time) string {
	t.Helper()
	end := start.Add(time.Duration(n+10) * time.Millisecond)
	run := results.Run{
		ID: id, Lab: "test lab", Plans: []string{"exanet-mesh"}, Host: "host-1", Seed: 7,
		Start: start, End: &end, Status: "failed", ExitCode: 1,
		Bitstreams: []results.BitstreamInfo{
			{Board: "exa-00", Kind: "tebf0808", Plan: "exanet-mesh", Design: "exanet", Version: "1.2.0", SHA256: "aa11"},
			{Board: "exa-10", Kind: "tebf0808", Plan: "exanet-mesh", Design: "exanet", Version: "1.2.0", SHA256: "bb22"},
		},
	}
	boards := []string{"exa-00", "exa-10", "exa-01", "exa-11"}
	payloads := []int{32, 64, 128, 256, 512}
	var ms []results.Measurement
	var vs []results.Verdict
	add := func(m results.Measurement, e results.Expectation) {
		ms = append(ms, m)
		vs = append(vs, results.Score(m, e))
	}
	for i := 0; i < n; i++ {
		b := boards[i%len(boards)]
		p := payloads[(i/len(boards))%len(payloads)]
		when := start.Add(time.Duration(i)*time.Millisecond + time.Duration(i%7)*time.Nanosecond)
		if i%3 == 0 {
			m := results.Measurement{Time: when, Plan: "exanet-mesh", Test: "latency", Board: b, Design: "exanet",
				Metric: "exanet.rtt", Params: results.Params{"hops": fmt.Sprint(1 + i%2), "payload": fmt.Sprint(p)},
				Value: 0.8 + float64(p)/100, Unit: "us", Samples: []float64{0.8, 0.9, 1.0, 1.1, float64(i%5) + 0.5}}
			add(m, results.Expectation{Metric: m.Metric, Params: m.Params, Value: 0.8 + float64(p)/100, RelTol: 0.15, AbsTol: 0.25, Unit: "us", Source: "ExaNet §4.2, Fig. 7/8"})
			continue
		}
		m := results.Measurement{Time: when, Plan: "exanet-mesh", Test: "bandwidth", Board: b, Design: "exanet",
			Metric: "exanet.bandwidth", Params: results.Params{"path": "router", "payload": fmt.Sprint(p)},
			Value: float64(p) / 40 * (1 + 0.01*float64(i%9)), Unit: "Gb/s"}
		add(m, results.Expectation{Metric: m.Metric, Params: m.Params, Value: float64(p) / 40, RelTol: 0.05, Unit: "Gb/s", Source: "ExaNet §4.3, Fig. 9"})
	}
	odd := start.Add(time.Duration(n) * time.Millisecond)
	// Text with quotes, a backslash and a line break.
	mt := results.Measurement{Time: odd, Plan: "exanet-mesh", Test: "dor_path", Board: "exa-00", Design: "exanet",
		Metric: "exanet.dor_path", Params: results.Params{"src": "0,0,0", "dst": "1 0=0"}, Text: "say \"hi\"\\n\nnext", Value: 3}
	add(mt, results.Expectation{Metric: mt.Metric, Params: mt.Params, Text: "(0,0,0)", Source: "ExaNet §3.3"})
	// NaN reading.
	mn := results.Measurement{Time: odd.Add(time.Millisecond), Plan: "exanet-mesh", Test: "bandwidth", Board: "exa-11", Design: "exanet",
		Metric: "exanet.bandwidth", Params: results.Params{"path": "link", "payload": "64"}, Value: math.NaN(), Unit: "Gb/s"}
	add(mn, results.Expectation{Metric: mn.Metric, Params: mn.Params, Value: 4.7, RelTol: 0.1, Source: "ExaNet §4.3, Fig. 10"})
	// Two readings of one series in the same nanosecond.
	for k := 0; k < 2; k++ {
		m := results.Measurement{Time: odd.Add(2 * time.Millisecond), Plan: "exanet-mesh", Test: "links", Board: "exa-01", Design: "exanet",
			Metric: "exanet.link.credits", Params: results.Params{"port": "sfp0", "board": "shadow"}, Value: float64(10 + k), Unit: "credits"}
		add(m, results.Expectation{Metric: m.Metric, Params: m.Params, Min: results.Float(1), Source: "ExaNet §3.4"})
	}
	// A verdict without a measurement.
	vs = append(vs, results.Verdict{Time: odd.Add(3 * time.Millisecond), Plan: "exanet-mesh", Test: "port_loopback", Board: "exa-10",
		Design: "exanet", Status: results.Error, Class: "infrastructure", Message: "board exa-10 did not answer\nin 2s"})
	dir := filepath.Join(root, id)
	return writeRun(t, dir, run, ms, vs)
}
