package influx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"

	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/influx/influxtest"
)

func testConfig(url string) Config {
	return Config{URL: url, Org: "lab", Bucket: testBucket, Token: srvToken, BatchSize: 500, RequestTimeout: 5 * time.Second, RetryBase: 20 * time.Millisecond}
}

// fluxRows returns every point of a run as InfluxDB holds it, one map per
// point (tags, fields, _measurement, _time), read back with Flux.
func fluxRows(t *testing.T, url, token, runID string) []map[string]any {
	t.Helper()
	c := influxdb2.NewClient(url, token)
	defer c.Close()
	q := fmt.Sprintf(`from(bucket: %q)
  |> range(start: 1970-01-01T00:00:00Z, stop: 2200-01-01T00:00:00Z)
  |> filter(fn: (r) => r.run_id == %q)
  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")`, testBucket, runID)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.QueryAPI("lab").Query(ctx, q)
	if err != nil {
		t.Fatalf("flux query: %v", err)
	}
	var out []map[string]any
	for res.Next() {
		row := map[string]any{}
		for k, v := range res.Record().Values() {
			switch k {
			case "result", "table", "_start", "_stop":
				continue
			}
			if v != nil {
				row[k] = v
			}
		}
		out = append(out, row)
	}
	if res.Err() != nil {
		t.Fatalf("flux result: %v", res.Err())
	}
	return out
}

func rowKey(measurement string, tags map[string]string, t time.Time) string {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(measurement)
	for _, k := range keys {
		fmt.Fprintf(&b, ",%s=%s", k, tags[k])
	}
	fmt.Fprintf(&b, "@%d", t.UnixNano())
	return b.String()
}

func indexRows(t *testing.T, rows []map[string]any) map[string]map[string]any {
	idx := map[string]map[string]any{}
	for _, r := range rows {
		tags := map[string]string{}
		for k, v := range r {
			if s, ok := v.(string); ok && !strings.HasPrefix(k, "_") && isTagKey(k) {
				tags[k] = s
			}
		}
		k := rowKey(r["_measurement"].(string), tags, r["_time"].(time.Time))
		if _, dup := idx[k]; dup {
			t.Errorf("point %s read back twice", k)
		}
		idx[k] = r
	}
	return idx
}

// stringFields are the string fields of the schema; every other string
// column of a row is a tag.
var stringFields = map[string]bool{"text": true, "verdict": true, "class": true, "expected_text": true, "source": true,
	"message": true, "value_invalid": true, "status": true, "plans": true, "faults": true, "labrunner_version": true}

func isTagKey(k string) bool { return !stringFields[k] }

func TestExportRoundTripFlux(t *testing.T) {
	root := t.TempDir()
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	dir := syntheticRun(t, root, "20260101-000000-roundtrip", 400, start)
	cfg := testConfig(srv.URL)
	cfg.BatchSize = 64
	ex, err := New(cfg, root)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	res, err := ex.Export(context.Background(), dir)
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	d, err := ReadRunData(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Points(d)
	if res.Spooled != len(want) || res.Sent != len(want) || res.Waiting != 0 || res.Quarantined != 0 {
		t.Fatalf("export result %+v, want %d spooled and sent, none waiting", res, len(want))
	}
	idx := indexRows(t, fluxRows(t, srv.URL, srvToken, d.Run.ID))
	if len(idx) != len(want) {
		t.Errorf("read back %d points, exported %d", len(idx), len(want))
	}

	// Every measurement of measurements.jsonl is there, point by point,
	// with its value, unit, parameters and verdict.
	vOf := map[string]results.Verdict{}
	for _, v := range d.Verdicts {
		vOf[v.Board+v.Test+results.Key(v.Metric, v.Params)+v.Time.String()] = v
	}
	seen := map[string]int{}
	for _, m := range d.Measurements {
		tags := map[string]string{TagLab: d.Run.Lab, TagRunID: d.Run.ID, TagPlan: m.Plan, TagBoard: m.Board, TagTest: m.Test, TagDesign: m.Design}
		if m.Unit != "" {
			tags[TagUnit] = m.Unit
		}
		for k, v := range m.Params {
			tags[ParamTag(k)] = SanitizeKey(v)
		}
		for _, b := range d.Run.Bitstreams {
			if b.Board == m.Board {
				tags[TagKind], tags[TagVersion], tags[TagBitstream] = b.Kind, b.Version, b.SHA256
			}
		}
		// Readings of one series in the same nanosecond were moved apart.
		at := m.Time
		base := rowKey(m.Metric, tags, at)
		at = at.Add(time.Duration(seen[base]) * time.Nanosecond)
		seen[base]++
		row, ok := idx[rowKey(m.Metric, tags, at)]
		if !ok {
			t.Errorf("measurement %s on %s at %s not read back", m.Key(), m.Board, at)
			continue
		}
		if math.IsNaN(m.Value) {
			if row["value_invalid"] != "NaN" || row["value"] != nil {
				t.Errorf("NaN reading %s: read back value %v, value_invalid %v", m.Key(), row["value"], row["value_invalid"])
			}
		} else if row["value"] != m.Value {
			t.Errorf("%s on %s: value %v read back, measured %v", m.Key(), m.Board, row["value"], m.Value)
		}
		if m.Text != "" && row["text"] != SanitizeString(m.Text) {
			t.Errorf("%s: text %q read back, measured %q", m.Key(), row["text"], m.Text)
		}
		v := vOf[m.Board+m.Test+m.Key()+m.Time.String()]
		if row["verdict"] != string(v.Status) {
			t.Errorf("%s on %s: verdict %v read back, run says %s", m.Key(), m.Board, row["verdict"], v.Status)
		}
		if v.ExpectedValue != nil && row["expected"] != *v.ExpectedValue {
			t.Errorf("%s: expected %v read back, run says %v", m.Key(), row["expected"], *v.ExpectedValue)
		}
		if v.Tolerance != nil && row["tolerance"] != *v.Tolerance {
			t.Errorf("%s: tolerance %v read back, run says %v", m.Key(), row["tolerance"], *v.Tolerance)
		}
		if len(m.Samples) > 0 && row["samples_n"] != int64(len(m.Samples)) {
			t.Errorf("%s: samples_n %v, %d samples taken", m.Key(), row["samples_n"], len(m.Samples))
		}
	}

	// And every point built (summaries too) came back with all its fields.
	for _, p := range want {
		tags := map[string]string{}
		for _, tg := range p.Tags {
			tags[SanitizeKey(tg.Key)] = SanitizeKey(tg.Value)
		}
		row, ok := idx[rowKey(p.Measurement, tags, p.Time)]
		if !ok {
			t.Errorf("point %s not read back", rowKey(p.Measurement, tags, p.Time))
			continue
		}
		for _, f := range p.Fields {
			var want any
			switch f.Kind {
			case FloatField:
				want = f.Float
			case IntField:
				want = f.Int
			case StringField:
				want = SanitizeString(f.Str)
			case BoolField:
				want = f.Bool
			}
			if row[f.Key] != want {
				t.Errorf("point %s field %s: read back %v (%T), wrote %v", p.Measurement, f.Key, row[f.Key], row[f.Key], want)
			}
		}
	}
}

func TestWrongTokenGivesClearErrorAndKeepsSpool(t *testing.T) {
	root := t.TempDir()
	dir := syntheticRun(t, root, "20260101-000000-token", 50, time.Now().Add(-time.Hour))
	var logs bytes.Buffer
	cfg := testConfig(srv.URL)
	cfg.Token = testUser + ":Wr0ng-passw0rd"
	cfg.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ex, err := New(cfg, root)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	res, err := ex.Export(context.Background(), dir)
	var xe *Error
	if !errors.As(err, &xe) || xe.Kind != Auth || xe.Status != http.StatusUnauthorized {
		t.Fatalf("export with a wrong token: %v, want an Auth error with HTTP 401", err)
	}
	for _, want := range []string{"refused the token", "401", "INFLUX_TOKEN", "--influx-token-file", "points wait in the spool"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if res.Sent != 0 || res.Waiting != res.Spooled || res.Waiting == 0 || xe.Waiting != res.Waiting {
		t.Errorf("result %+v (error says %d waiting): every point should stay in the spool", res, xe.Waiting)
	}
	for _, s := range []string{err.Error(), logs.String()} {
		if strings.Contains(s, "Wr0ng-passw0rd") {
			t.Errorf("the token leaked: %s", s)
		}
	}

	// The right token sends what waited.
	cfg.Token = srvToken
	ex2, _ := New(cfg, root)
	defer ex2.Close()
	res2, err := ex2.Flush(context.Background())
	if err != nil || res2.Sent != res.Waiting || res2.Waiting != 0 {
		t.Fatalf("flush with the right token: %+v, %v; want %d sent", res2, err, res.Waiting)
	}
}

func TestUnknownBucketKeepsSpool(t *testing.T) {
	root := t.TempDir()
	dir := syntheticRun(t, root, "20260101-000000-bucket", 20, time.Now().Add(-time.Hour))
	cfg := testConfig(srv.URL)
	cfg.Bucket = "nosuchdb/autogen"
	ex, _ := New(cfg, root)
	defer ex.Close()
	res, err := ex.Export(context.Background(), dir)
	var xe *Error
	if !errors.As(err, &xe) || xe.Kind != NotFound {
		t.Fatalf("export to a missing database: %v, want a NotFound error", err)
	}
	if !strings.Contains(err.Error(), "nosuchdb") || res.Waiting == 0 {
		t.Errorf("error %q / result %+v: should name the database and keep the points", err, res)
	}
}

func TestServerDownKeepsEverything(t *testing.T) {
	root := t.TempDir()
	dir := syntheticRun(t, root, "20260101-000000-down", 30, time.Now().Add(-time.Hour))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	cfg := testConfig("http://" + addr)
	cfg.Retries = 1
	ex, _ := New(cfg, root)
	defer ex.Close()
	res, err := ex.Export(context.Background(), dir)
	var xe *Error
	if !errors.As(err, &xe) || xe.Kind != Unreachable {
		t.Fatalf("export to a stopped server: %v, want Unreachable", err)
	}
	if res.Waiting != res.Spooled || res.Spooled == 0 {
		t.Fatalf("result %+v: all points should wait", res)
	}
	if n, err := ex.Waiting(); err != nil || n != res.Spooled {
		t.Errorf("Waiting() = %d, %v; want %d", n, err, res.Spooled)
	}
}

func TestSlowServerTimesOutAndKeepsPoints(t *testing.T) {
	root := t.TempDir()
	dir := syntheticRun(t, root, "20260101-000000-slow", 10, time.Now().Add(-time.Hour))
	// A server that takes the connection and never answers.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var conns sync.WaitGroup
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
		conns.Wait()
	}()
	cfg := testConfig("http://" + l.Addr().String())
	cfg.RequestTimeout = 200 * time.Millisecond
	cfg.Retries = 1
	ex, _ := New(cfg, root)
	defer ex.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := ex.Export(ctx, dir)
	var xe *Error
	if !errors.As(err, &xe) || xe.Kind != Unreachable {
		t.Fatalf("export to a server that never answers: %v, want Unreachable", err)
	}
	if ctx.Err() != nil {
		t.Errorf("the export waited for the whole context instead of its request timeout")
	}
	if res.Waiting != res.Spooled {
		t.Errorf("result %+v: all points should wait", res)
	}
}

// countPoints counts the points of a run per measurement with InfluxQL.
func countPoints(t *testing.T, s *influxtest.Server, runID string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, field := range []string{"verdict", "total"} {
		r, err := s.Query(testDB, fmt.Sprintf(`SELECT count(%q) FROM /.*/ WHERE run_id = '%s'`, field, runID))
		if err != nil {
			t.Fatal(err)
		}
		for _, sr := range r.Series {
			for _, v := range sr.Values {
				var n int64
				fmt.Sscan(fmt.Sprint(v[1]), &n)
				out[sr.Name] += int(n)
			}
		}
	}
	return out
}

func wantCounts(ps []Point) map[string]int {
	out := map[string]int{}
	for _, p := range ps {
		for _, f := range p.Fields {
			if f.Key == "verdict" || f.Key == "total" {
				out[p.Measurement]++
			}
		}
	}
	return out
}

// TestStopServerMidExportExactlyOnce stops the server after a few batches,
// starts it again, exports again: every point arrives, once.
func TestStopServerMidExportExactlyOnce(t *testing.T) {
	s, err := influxtest.Start(t.TempDir(), influxtest.Options{Databases: []string{testDB}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	root := t.TempDir()
	dir := syntheticRun(t, root, "20260101-000000-midway", 6000, time.Now().Add(-2*time.Hour))
	cfg := testConfig(s.URL)
	cfg.Token = ""
	cfg.BatchSize = 400
	cfg.Retries = 1
	ex, _ := New(cfg, root)
	defer ex.Close()
	batches := 0
	ex.Progress = func(sent, left int) {
		batches++
		if batches == 3 {
			s.Kill() // as a crash would: mid-export, no warning
		}
	}
	res, err := ex.Export(context.Background(), dir)
	var xe *Error
	if !errors.As(err, &xe) || xe.Kind != Unreachable {
		t.Fatalf("export with the server killed midway: %v, want Unreachable", err)
	}
	if res.Sent != 3*400 || res.Waiting != res.Spooled-res.Sent {
		t.Fatalf("result %+v: want 1200 sent and the rest waiting", res)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	ex.Progress = nil
	res2, err := ex.Flush(context.Background())
	if err != nil || res2.Sent != res.Waiting || res2.Waiting != 0 {
		t.Fatalf("flush after restart: %+v, %v; want the %d waiting points sent", res2, err, res.Waiting)
	}
	d, _ := ReadRunData(dir)
	want := wantCounts(Points(d))
	got := countPoints(t, s, d.Run.ID)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("points per measurement after the restart: %v, want %v", got, want)
	}

	// Exporting the whole run again (a person re-running `labrunner
	// export`) adds no point: same series, same timestamps.
	res3, err := ex.Export(context.Background(), dir)
	if err != nil || res3.Sent != res.Spooled {
		t.Fatalf("re-export: %+v, %v", res3, err)
	}
	if got := countPoints(t, s, d.Run.ID); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("points per measurement after a re-export: %v, want %v", got, want)
	}
}

// faultProxy stands in front of the real server and answers the first
// requests itself with the given statuses.
type faultProxy struct {
	statuses []int
	n        atomic.Int32
	proxy    *httputil.ReverseProxy
}

func (f *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := int(f.n.Add(1)) - 1
	if i < len(f.statuses) {
		if f.statuses[i] == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.statuses[i])
		fmt.Fprintf(w, `{"code":"injected","message":"injected %d"}`, f.statuses[i])
		return
	}
	f.proxy.ServeHTTP(w, r)
}

func TestThrottledAndServerErrorsAreRetried(t *testing.T) {
	u, _ := url.Parse(srv.URL)
	fp := &faultProxy{statuses: []int{429, 503, 500}, proxy: httputil.NewSingleHostReverseProxy(u)}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: fp}
	go hs.Serve(l)
	defer hs.Close()

	root := t.TempDir()
	dir := syntheticRun(t, root, "20260101-000000-retry", 100, time.Now().Add(-time.Hour))
	cfg := testConfig("http://" + l.Addr().String())
	cfg.Retries = 3
	ex, _ := New(cfg, root)
	defer ex.Close()
	res, err := ex.Export(context.Background(), dir)
	if err != nil || res.Waiting != 0 || res.Sent != res.Spooled {
		t.Fatalf("export through 429, 503, 500: %+v, %v; want everything sent after retries", res, err)
	}
	d, _ := ReadRunData(dir)
	got, _ := queryCountFlux(t, d.Run.ID)
	if got != len(Points(d)) {
		t.Errorf("%d points read back, want %d", got, len(Points(d)))
	}

	// When the server keeps answering 503, the export stops and keeps the
	// points: it never fails the run.
	fp.n.Store(0)
	fp.statuses = []int{503, 503, 503, 503, 503}
	cfg.Retries = 2
	ex2, _ := New(cfg, root)
	defer ex2.Close()
	res2, err := ex2.Export(context.Background(), dir)
	var xe *Error
	if !errors.As(err, &xe) || xe.Kind != ServerError || res2.Waiting != res2.Spooled {
		t.Fatalf("export against a failing server: %+v, %v; want ServerError and every point waiting", res2, err)
	}
}

func queryCountFlux(t *testing.T, runID string) (int, error) {
	rows := fluxRows(t, srv.URL, srvToken, runID)
	return len(rows), nil
}

// TestRefusedPointIsQuarantined: a batch holding one point the server
// refuses (a field type conflict: "value" as a string where it is a float)
// is split until that point is found; the rest arrive.
func TestRefusedPointIsQuarantined(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig(srv.URL)
	ex, _ := New(cfg, root)
	defer ex.Close()
	sp, err := OpenSpool(context.Background(), ex.SpoolDir())
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Now().Add(-time.Hour).UnixNano()
	var lines [][]byte
	for i := 0; i < 37; i++ {
		v := fmt.Sprintf("%d.5", i)
		if i == 23 {
			v = `"oops"`
		}
		lines = append(lines, []byte(fmt.Sprintf("labrunner_quarantine_test,run_id=q1,i=%d value=%s %d", i, v, ts+int64(i))))
	}
	if err := sp.PutLines("q1", 0, lines); err != nil {
		t.Fatal(err)
	}
	sp.Close()
	res, err := ex.Flush(context.Background())
	if err != nil || res.Sent != 36 || res.Quarantined != 1 || res.Waiting != 0 {
		t.Fatalf("flush with one bad point: %+v, %v; want 36 sent, 1 quarantined", res, err)
	}
	q, _ := filepath.Glob(filepath.Join(ex.SpoolDir(), quarantineDir, "*.lp"))
	if len(q) != 1 {
		t.Fatalf("quarantine holds %v, want one file", q)
	}
	data, _ := os.ReadFile(q[0])
	seg, err := ParseSegment(data)
	if err != nil || len(seg.Lines) != 1 || !bytes.Contains(seg.Lines[0], []byte(`"oops"`)) {
		t.Errorf("quarantined segment %q: %v", data, err)
	}
	why, _ := os.ReadFile(strings.TrimSuffix(q[0], ".lp") + ".txt")
	if !strings.Contains(string(why), "conflict") {
		t.Errorf("quarantine note %q does not give the server's reason", why)
	}
	r, err := srv.Query(testDB, `SELECT count(value) FROM labrunner_quarantine_test WHERE run_id = 'q1'`)
	if err != nil || len(r.Series) != 1 || fmt.Sprint(r.Series[0].Values[0][1]) != "36" {
		t.Errorf("points of the batch read back: %+v, %v; want 36", r, err)
	}
}

// TestTokenNeverWritten exports with a token through failures and success
// and looks for it in everything labrunner wrote.
func TestTokenNeverWritten(t *testing.T) {
	root := t.TempDir()
	dir := syntheticRun(t, root, "20260101-000000-secret", 40, time.Now().Add(-time.Hour))
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var errs []string
	for _, tok := range []string{testUser + ":another-S3cret", srvToken} {
		cfg := testConfig(srv.URL)
		cfg.Token, cfg.Log = tok, log
		ex, _ := New(cfg, root)
		log.Info("config", "influx", cfg)
		errs = append(errs, fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg))
		if _, err := ex.Export(context.Background(), dir); err != nil {
			errs = append(errs, err.Error())
		}
		ex.Close()
	}
	secrets := []string{"another-S3cret", testPass}
	for _, s := range append(errs, logs.String()) {
		for _, sec := range secrets {
			if strings.Contains(s, sec) {
				t.Errorf("token part %q appears in %q", sec, s)
			}
		}
	}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		for _, sec := range secrets {
			if bytes.Contains(b, []byte(sec)) {
				t.Errorf("token part %q written to %s", sec, p)
			}
		}
		return nil
	})
}

func TestLoadToken(t *testing.T) {
	f := filepath.Join(t.TempDir(), "token")
	os.WriteFile(f, []byte("  user:pa55word\n"), 0o600)
	if tok, err := LoadToken(f); err != nil || tok != "user:pa55word" {
		t.Errorf("LoadToken(file) = %q, %v", tok, err)
	}
	t.Setenv("INFLUX_TOKEN", "from-env")
	if tok, err := LoadToken(""); err != nil || tok != "from-env" {
		t.Errorf("LoadToken(\"\") = %q, %v; want the environment's", tok, err)
	}
	os.WriteFile(f, []byte("line1\nline2\n"), 0o600)
	if _, err := LoadToken(f); err == nil || strings.Contains(err.Error(), "line1") {
		t.Errorf("two-line token file: %v (must fail without showing the content)", err)
	}
	if _, err := LoadToken(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "--influx-token-file") {
		t.Errorf("missing token file: %v", err)
	}
}

// TestGrafanaDashboardQueries runs every Flux query of the Grafana
// dashboard in docs/grafana against an exported run: the dashboard must
// match the schema the exporter writes.
func TestGrafanaDashboardQueries(t *testing.T) {
	root := t.TempDir()
	dir := syntheticRun(t, root, "20260101-000000-grafana", 60, time.Now().Add(-30*time.Minute))
	ex, _ := New(testConfig(srv.URL), root)
	defer ex.Close()
	if _, err := ex.Export(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "grafana", "labrunner-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Query string `json:"query"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query string `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	subst := strings.NewReplacer("${bucket}", testBucket, "${lab:regex}", ".*", "${board:regex}", ".*", "${design:regex}", ".*",
		"${design}", "all designs", "v.timeRangeStart", "-2h", "v.timeRangeStop", "now()", "v.windowPeriod", "1m")
	c := influxdb2.NewClient(srv.URL, srvToken)
	defer c.Close()
	run := func(what, q string) int {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := c.QueryAPI("lab").Query(ctx, subst.Replace(q))
		if err != nil {
			t.Errorf("%s: %v\n%s", what, err, subst.Replace(q))
			return 0
		}
		n := 0
		for res.Next() {
			n++
		}
		if res.Err() != nil {
			t.Errorf("%s: %v", what, res.Err())
		}
		return n
	}
	queries := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			queries++
			if n := run("panel "+p.Title, tg.Query); n == 0 {
				t.Errorf("panel %q shows nothing for an exported run", p.Title)
			}
		}
	}
	for _, v := range dash.Templating.List {
		if v.Type == "query" {
			queries++
			if n := run("variable "+v.Name, v.Query); n == 0 {
				t.Errorf("variable %q lists nothing", v.Name)
			}
		}
	}
	if queries < 6 {
		t.Errorf("only %d queries in the dashboard", queries)
	}
}

// A run directory as the nightly leaves it has its points file: the export
// sends those lines, and what the server holds is exactly what rebuilding
// the points from the logs gives (same series, timestamps and fields). A
// points file that no longer matches the logs is ignored.
func TestExportFromPointsFile(t *testing.T) {
	root := t.TempDir()
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	dir := syntheticRun(t, root, "20260101-000000-pointsfile", 300, start)
	n, err := WritePointsFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ReadRunData(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Points(d)
	if n != len(want) {
		t.Fatalf("points file holds %d points, Points gives %d", n, len(want))
	}
	body, ok := readPointsFile(dir)
	if !ok {
		t.Fatal("a fresh points file does not match its run directory")
	}
	var enc []byte
	for i := range want {
		enc = want[i].AppendLine(enc)
		enc = append(enc, '\n')
	}
	if !bytes.Equal(body, enc) {
		t.Fatal("points file lines differ from Points' encoding")
	}

	cfg := testConfig(srv.URL)
	cfg.BatchSize = 50
	ex, err := New(cfg, root)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	res, err := ex.Export(context.Background(), dir)
	if err != nil || res.Sent != len(want) || res.Waiting != 0 {
		t.Fatalf("export %+v, %v; want %d sent", res, err, len(want))
	}
	idx := indexRows(t, fluxRows(t, srv.URL, srvToken, d.Run.ID))
	if len(idx) != len(want) {
		t.Errorf("read back %d points, want %d", len(idx), len(want))
	}
	for _, p := range want {
		tags := map[string]string{}
		for _, tg := range p.Tags {
			tags[tg.Key] = tg.Value
		}
		if _, ok := idx[rowKey(SanitizeKey(p.Measurement), tags, p.Time)]; !ok {
			t.Errorf("point %s %v at %s not read back", p.Measurement, tags, p.Time.Format(time.RFC3339Nano))
			break
		}
	}

	// The run directory changes (a resumed run appends): the file is stale.
	f, err := os.OpenFile(filepath.Join(dir, results.MeasurementsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"metric":"late","value":1}` + "\n")
	f.Close()
	if _, ok := readPointsFile(dir); ok {
		t.Error("a points file older than measurements.jsonl was taken")
	}
	os.WriteFile(filepath.Join(dir, PointsFile), []byte("#labrunner-points v1 run.json=1:00000000\nx value=1\n"), 0o644)
	if _, ok := readPointsFile(dir); ok {
		t.Error("a points file with a wrong fingerprint was taken")
	}
}
