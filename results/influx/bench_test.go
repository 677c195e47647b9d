package influx

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// benchRun is the run both benchmarks write: 20 000 measurements (about
// 20 050 points with the summaries).
const benchMeasurements = 20000

// BenchmarkExport is `labrunner export RUN_DIR` against the local server,
// on a run directory as the nightly leaves it: check its points file
// against the logs, spool the points (fsync), send them in batches of 5000
// with the client, drop each batch from the spool.
func BenchmarkExport(b *testing.B) {
	root := b.TempDir()
	dir := syntheticRun(b, root, "20260101-000000-bench", benchMeasurements, time.Now().Add(-3*time.Hour))
	// As the nightly leaves a run directory: with its points file.
	if _, err := WritePointsFile(dir); err != nil {
		b.Fatal(err)
	}
	benchExport(b, root, dir)
}

// BenchmarkExportRebuild is the export of a run directory without a
// points file (older runs, merged shards): the points are built from the
// logs while they are sent.
func BenchmarkExportRebuild(b *testing.B) {
	root := b.TempDir()
	dir := syntheticRun(b, root, "20260101-000000-bench", benchMeasurements, time.Now().Add(-3*time.Hour))
	benchExport(b, root, dir)
}

func benchExport(b *testing.B, root, dir string) {
	cfg := testConfig(srv.URL)
	cfg.BatchSize = DefaultBatchSize
	ex, err := New(cfg, root)
	if err != nil {
		b.Fatal(err)
	}
	defer ex.Close()
	points := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := ex.Export(context.Background(), dir)
		if err != nil || res.Waiting != 0 {
			b.Fatalf("export: %+v, %v", res, err)
		}
		points += res.Sent
	}
	b.ReportMetric(float64(points)/b.Elapsed().Seconds(), "points/s")
}

// BenchmarkPlainWrite is the yardstick: the same points, already encoded as
// line protocol in memory, POSTed in batches of 5000 to /api/v2/write with
// net/http, nothing else.
func BenchmarkPlainWrite(b *testing.B) {
	root := b.TempDir()
	dir := syntheticRun(b, root, "20260101-000000-plain", benchMeasurements, time.Now().Add(-3*time.Hour))
	d, err := ReadRunData(dir)
	if err != nil {
		b.Fatal(err)
	}
	ps := Points(d)
	var bodies [][]byte
	for i := 0; i < len(ps); i += DefaultBatchSize {
		var buf []byte
		for j := i; j < min(i+DefaultBatchSize, len(ps)); j++ {
			buf = ps[j].AppendLine(buf)
			buf = append(buf, '\n')
		}
		bodies = append(bodies, buf)
	}
	u := fmt.Sprintf("%s/api/v2/write?org=lab&bucket=%s&precision=ns", srv.URL, url.QueryEscape(testBucket))
	client := &http.Client{Timeout: 30 * time.Second}
	points := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, body := range bodies {
			req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
			req.Header.Set("Authorization", "Token "+srvToken)
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				b.Fatalf("HTTP %d", resp.StatusCode)
			}
		}
		points += len(ps)
	}
	b.ReportMetric(float64(points)/b.Elapsed().Seconds(), "points/s")
}

// BenchmarkExportFlush is the sending half of an export: the run's points
// are in the spool already; read each segment, check it, send it with the
// client, drop it from the spool (fsync).
func BenchmarkExportFlush(b *testing.B) {
	root := b.TempDir()
	dir := syntheticRun(b, root, "20260101-000000-flush", benchMeasurements, time.Now().Add(-3*time.Hour))
	d, err := ReadRunData(dir)
	if err != nil {
		b.Fatal(err)
	}
	ps := Points(d)
	cfg := testConfig(srv.URL)
	cfg.BatchSize = DefaultBatchSize
	ex, err := New(cfg, root)
	if err != nil {
		b.Fatal(err)
	}
	defer ex.Close()
	points := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s, err := OpenSpool(context.Background(), ex.SpoolDir())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.PutRun(d.Run.ID, ps, DefaultBatchSize); err != nil {
			b.Fatal(err)
		}
		s.Close()
		b.StartTimer()
		res, err := ex.Flush(context.Background())
		if err != nil || res.Waiting != 0 {
			b.Fatalf("flush: %+v, %v", res, err)
		}
		points += res.Sent
	}
	b.ReportMetric(float64(points)/b.Elapsed().Seconds(), "points/s")
}
