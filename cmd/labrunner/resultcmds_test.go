package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"

	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/influx"
	"github.com/labrunner/labrunner/results/influx/influxtest"
)

func onlyRunDir(t *testing.T, root string, except ...string) string {
	t.Helper()
	skip := map[string]bool{}
	for _, e := range except {
		skip[e] = true
	}
	var found []string
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		p := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(p, results.RunFile)); err == nil && !skip[p] {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		t.Fatalf("run directories under %s: %v, want one new one", root, found)
	}
	return found[0]
}

// TestNightlyExportsToInfluxDB is the acceptance check: `labrunner nightly
// --influx-url ...` against a real local InfluxDB, then a Flux query, gives
// back exactly the measurements of the run directory. A second nightly with
// the server unreachable keeps its exit code and says how many points wait;
// `labrunner export` then sends them. The token appears nowhere.
func TestNightlyExportsToInfluxDB(t *testing.T) {
	// Parallel: it sets no environment (a buffer gets plain progress lines
	// without CI=true, and --influx-token-file wins over $INFLUX_TOKEN).
	t.Parallel()
	const pass = "N1ghtly-S3cret"
	srv, err := influxtest.Start(t.TempDir(), influxtest.Options{Flux: true, User: "admin", Password: pass, Databases: []string{"lab"}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	tokFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokFile, []byte(srv.Token()+"\n"), 0o600)
	root := t.TempDir()
	flags := []string{"--lab", smallLab(t), "--influx-org", "lab", "--influx-bucket", "lab/autogen", "--influx-token-file", tokFile}

	code, out := runCLI(t, append([]string{"nightly", "--out", root, "--influx-url", srv.URL}, flags...)...)
	dir := onlyRunDir(t, root)
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if code != run.ExitCode {
		t.Fatalf("nightly exit %d, run.json says %d:\n%s", code, run.ExitCode, out)
	}
	ms, _ := results.ReadMeasurements(dir)
	if !strings.Contains(out, fmt.Sprintf("points sent, 0 waiting")) {
		t.Errorf("summary does not report the export:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
		t.Errorf("no report.html: %v", err)
	}
	checkFlux(t, srv, run.ID, ms)

	// Server unreachable: the verdicts decide the exit code, the points wait.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	down := "http://" + l.Addr().String()
	l.Close()
	code2, out2 := runCLI(t, append([]string{"nightly", "--out", root, "--influx-url", down}, flags...)...)
	dir2 := onlyRunDir(t, root, dir)
	run2, _ := results.ReadRun(dir2)
	if code2 != run2.ExitCode {
		t.Errorf("an unreachable InfluxDB changed the exit code: %d, run.json says %d", code2, run2.ExitCode)
	}
	if !strings.Contains(out2, "waiting in the spool") || strings.Contains(out2, " 0 waiting") {
		t.Errorf("summary does not say points wait:\n%s", out2)
	}
	if !strings.Contains(out2, "Compared with "+run.ID) {
		t.Errorf("the second nightly was not compared with the first:\n%s", out2)
	}
	// The next export to the same server sends what waited.
	code3, out3 := runCLI(t, append([]string{"export", "--influx-url", down}, append(flags, dir2)...)...)
	if code3 != 3 {
		t.Errorf("export to an unreachable server: exit %d, want 3:\n%s", code3, out3)
	}
	ms2, _ := results.ReadMeasurements(dir2)
	// The spool is per server: exporting to the real one spools and sends
	// the run again (the copy for the unreachable server keeps waiting).
	code4, out4 := runCLI(t, append([]string{"export", "--influx-url", srv.URL}, append(flags, dir2)...)...)
	if code4 != 0 || !strings.Contains(out4, " 0 waiting") {
		t.Fatalf("export: exit %d:\n%s", code4, out4)
	}
	checkFlux(t, srv, run2.ID, ms2)

	code5, out5 := runCLI(t, append([]string{"export", "--influx-url", srv.URL}, "--influx-org", "lab", "--influx-bucket", "lab/autogen", dir2)...)
	if code5 != 2 || !strings.Contains(out5, "refused the token") {
		t.Errorf("export without a token to a server that wants one: exit %d, want 2 and a clear error:\n%s", code5, out5)
	}

	// compare and report on the two runs.
	code6, out6 := runCLI(t, "compare", "--threshold", "*=0.5", dir, dir2)
	if (code6 != 0 && code6 != 1) || !strings.Contains(out6, "Compared with "+run.ID) {
		t.Errorf("labrunner compare: exit %d:\n%s", code6, out6)
	}
	os.Remove(filepath.Join(dir2, "report.html"))
	code7, out7 := runCLI(t, "report", dir2)
	if _, err := os.Stat(filepath.Join(dir2, "report.html")); code7 != 0 || err != nil {
		t.Errorf("labrunner report: exit %d, %v:\n%s", code7, err, out7)
	}

	for _, s := range []string{out, out2, out3, out4, out5} {
		if strings.Contains(s, pass) {
			t.Errorf("the token was printed:\n%s", s)
		}
	}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(pass)) {
				t.Errorf("the token was written to %s", p)
			}
		}
		return nil
	})
}

// smallLab is the default emulated rack with a shorter test list: the
// export is what is tested here, not the plan, and the suite runs with -race.
func smallLab(t *testing.T) string {
	t.Helper()
	src := string(labconfig.DefaultSource())
	i := strings.Index(src, "    tests:\n")
	if i < 0 {
		t.Fatal("the default lab has no tests: list to shorten")
	}
	src = src[:i] + `    tests:
      - test: registers
      - test: bandwidth
        params: {path: router, payloads: [64, 512], packets: 200}
      - test: latency
        params: {hops: [1, 2], payloads: [16, 256], iterations: 16}
      - test: dor_path
`
	p := filepath.Join(t.TempDir(), "lab.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkFlux reads a run back with Flux and compares it point by point with
// the run directory's measurements.
func checkFlux(t *testing.T, srv *influxtest.Server, runID string, ms []results.Measurement) {
	t.Helper()
	c := influxdb2.NewClient(srv.URL, srv.Token())
	defer c.Close()
	q := fmt.Sprintf(`from(bucket: "lab/autogen")
  |> range(start: 1970-01-01T00:00:00Z, stop: 2200-01-01T00:00:00Z)
  |> filter(fn: (r) => r.run_id == %q and r._field == "value" and r._measurement !~ /^labrunner_/)`, runID)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := c.QueryAPI("lab").Query(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for res.Next() {
		r := res.Record()
		var ps []string
		for k, v := range r.Values() {
			switch k {
			case "result", "table", "_start", "_stop", "_time", "_value", "_field", "_measurement", "lab", "run_id", "plan", "design",
				"board", "test", "unit", "board_kind", "design_version", "bitstream_sha256":
				continue
			}
			ps = append(ps, fmt.Sprintf("%s=%v", k, v))
		}
		sort.Strings(ps)
		// A tag with an empty value does not exist in InfluxDB (a rack-level
		// measurement has no board): it reads back as nil.
		tag := func(k string) string {
			if v := r.ValueByKey(k); v != nil {
				return fmt.Sprint(v)
			}
			return ""
		}
		got = append(got, fmt.Sprintf("%s %s %s %s [%s] %d %v", r.Measurement(), tag("plan"), tag("board"), tag("test"),
			strings.Join(ps, ","), r.Time().UnixNano(), r.Value()))
	}
	if res.Err() != nil {
		t.Fatal(res.Err())
	}
	var want []string
	for _, m := range ms {
		var ps []string
		for k, v := range m.Params {
			ps = append(ps, fmt.Sprintf("%s=%s", influx.ParamTag(k), influx.SanitizeKey(v)))
		}
		sort.Strings(ps)
		want = append(want, fmt.Sprintf("%s %s %s %s [%s] %d %v", m.Metric, m.Plan, m.Board, m.Test, strings.Join(ps, ","), m.Time.UnixNano(), m.Value))
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Flux returned %d measurements, the run directory holds %d; first differences:\n%s", len(got), len(want), diff(got, want))
	}
}

func diff(got, want []string) string {
	g := map[string]bool{}
	for _, s := range got {
		g[s] = true
	}
	w := map[string]bool{}
	for _, s := range want {
		w[s] = true
	}
	var out []string
	for _, s := range want {
		if !g[s] && len(out) < 5 {
			out = append(out, "missing: "+s)
		}
	}
	for _, s := range got {
		if !w[s] && len(out) < 10 {
			out = append(out, "extra:   "+s)
		}
	}
	return strings.Join(out, "\n")
}
