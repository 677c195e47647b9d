package influx

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	lp "github.com/influxdata/line-protocol"

	"github.com/labrunner/labrunner/results"
)

func encodeAll(ps []Point) string {
	var b []byte
	for i := range ps {
		b = ps[i].AppendLine(b)
		b = append(b, '\n')
	}
	return string(b)
}

func TestPointsAreDeterministicAndComplete(t *testing.T) {
	root := t.TempDir()
	dir := syntheticRun(t, root, "20260101-000000-det", 40, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	d, err := ReadRunData(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, b := Points(d), Points(d)
	if encodeAll(a) != encodeAll(b) {
		t.Fatal("two builds of the same run differ: re-sends would duplicate points")
	}
	counts := map[string]int{}
	for _, p := range a {
		counts[p.Measurement]++
	}
	if counts[RunMeasurement] != 1 {
		t.Errorf("%d run points, want 1", counts[RunMeasurement])
	}
	if counts[VerdictMeasurement] != 1 {
		t.Errorf("%d verdict-only points, want 1 (the errored port_loopback)", counts[VerdictMeasurement])
	}
	metricPoints := 0
	for m, n := range counts {
		if !strings.HasPrefix(m, "labrunner_") {
			metricPoints += n
		}
	}
	if metricPoints != len(d.Measurements) {
		t.Errorf("%d metric points for %d measurements", metricPoints, len(d.Measurements))
	}
	// Each (series, timestamp) is unique, including the two readings taken
	// in the same nanosecond.
	seen := map[string]bool{}
	for _, p := range a {
		k := p.SeriesKey() + "@" + p.Time.String()
		if seen[k] {
			t.Errorf("two points share series and time %s", k)
		}
		seen[k] = true
	}
	// The parameter called "board" does not overwrite the board tag.
	for _, p := range a {
		if p.Measurement == "exanet.link.credits" {
			if p.TagValue(TagBoard) != "exa-01" || p.TagValue("param_board") != "shadow" {
				t.Errorf("clashing parameter: tags %v", p.Tags)
			}
		}
		if p.Measurement == "exanet.bandwidth" && p.TagValue(TagBoard) == "exa-00" {
			if p.TagValue(TagKind) != "tebf0808" || p.TagValue(TagBitstream) != "aa11" || p.TagValue(TagVersion) != "1.2.0" {
				t.Errorf("board tags from run.json missing: %v", p.Tags)
			}
		}
	}
}

func TestTestAndRunSummaries(t *testing.T) {
	root := t.TempDir()
	dir := syntheticRun(t, root, "20260101-000000-sum", 12, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	d, _ := ReadRunData(dir)
	var run *Point
	tests := map[string]*Point{}
	ps := Points(d)
	for i := range ps {
		switch ps[i].Measurement {
		case RunMeasurement:
			run = &ps[i]
		case TestMeasurement:
			tests[ps[i].TagValue(TagTest)+"/"+ps[i].TagValue(TagBoard)] = &ps[i]
		}
	}
	field := func(p *Point, k string) Field {
		for _, f := range p.Fields {
			if f.Key == k {
				return f
			}
		}
		t.Fatalf("point %s has no field %s", p.Measurement, k)
		return Field{}
	}
	if f := field(run, "total"); f.Int != int64(len(d.Verdicts)) {
		t.Errorf("run total %d, %d verdicts", f.Int, len(d.Verdicts))
	}
	if !run.Time.Equal(d.Run.Start) {
		t.Errorf("run point at %s, run started %s", run.Time, d.Run.Start)
	}
	pl := tests["port_loopback/exa-10"]
	if pl == nil || field(pl, "status").Str != "error" || field(pl, "error").Int != 1 {
		t.Errorf("port_loopback summary %+v", pl)
	}
}

func TestLineEscaping(t *testing.T) {
	p := Point{Measurement: "m x,y", Time: time.Unix(1, 5)}
	p.SetTag("b", "v 1,=2")
	p.SetTag("a", "x\ny")
	p.SetTag("empty", "")
	p.AddString("s", "q\"\\\nz")
	p.AddFloat("f", 2.5)
	p.AddInt("i", -3)
	p.AddBool("ok", true)
	if p.AddFloat("nan", math.NaN()) {
		t.Error("NaN field accepted")
	}
	got := string(p.AppendLine(nil))
	want := `m\ x\,y,a=x\ y,b=v\ 1\,\=2 s="q\"\\ z",f=2.5,i=-3i,ok=t 1000000005`
	if got != want {
		t.Errorf("line\n got %s\nwant %s", got, want)
	}
}

func TestSpoolSegmentsAndCorruption(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenSpool(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ps []Point
	for i := 0; i < 25; i++ {
		p := Point{Measurement: "m", Time: time.Unix(0, int64(i))}
		p.AddInt("v", int64(i))
		ps = append(ps, p)
	}
	n, err := s.PutRun("run-a", ps, 10)
	if err != nil || n != 25 {
		t.Fatalf("PutRun: %d, %v", n, err)
	}
	names, _ := s.Pending()
	if len(names) != 3 {
		t.Fatalf("segments %v, want 3 of at most 10 points", names)
	}
	// Spooling the run again with fewer points replaces its segments.
	if _, err := s.PutRun("run-a", ps[:5], 10); err != nil {
		t.Fatal(err)
	}
	if pts, segs, _ := s.Waiting(); pts != 5 || segs != 1 {
		t.Errorf("after re-spooling: %d points in %d segments, want 5 in 1", pts, segs)
	}
	// A damaged segment fails its checksum.
	names, _ = s.Pending()
	path := filepath.Join(dir, pendingDir, names[0])
	data, _ := os.ReadFile(path)
	data[len(data)-3] ^= 0x01
	if _, err := ParseSegment(data); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("damaged segment parsed: %v", err)
	}
	// A second process cannot take the spool while it is open.
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	if _, err := OpenSpool(ctx, dir); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("second OpenSpool: %v, want the lock to hold", err)
	}
	// A temporary file left by a crash is removed on open.
	os.WriteFile(filepath.Join(dir, pendingDir, ".x.lp.tmp123"), []byte("half"), 0o644)
	s.Close()
	s2, err := OpenSpool(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := os.Stat(filepath.Join(dir, pendingDir, ".x.lp.tmp123")); err == nil {
		t.Error("a crash's temporary file was left in pending/")
	}
}

func TestCorruptSegmentIsSetAsideNotSent(t *testing.T) {
	root := t.TempDir()
	ex, _ := New(testConfig(srv.URL), root)
	defer ex.Close()
	s, _ := OpenSpool(context.Background(), ex.SpoolDir())
	s.PutLines("bad", 0, [][]byte{[]byte("labrunner_corrupt_test v=1 1")})
	names, _ := s.Pending()
	p := filepath.Join(ex.SpoolDir(), pendingDir, names[0])
	data, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(data, []byte("v=1"), []byte("v=2"), 1), 0o644)
	s.Close()
	res, err := ex.Flush(context.Background())
	if err != nil || res.Corrupt != 1 || res.Sent != 0 || res.Waiting != 0 {
		t.Fatalf("flush of a damaged segment: %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(ex.SpoolDir(), quarantineDir, names[0]+".corrupt")); err != nil {
		t.Errorf("damaged segment not kept in quarantine: %v", err)
	}
}

// FuzzLineProtocol: whatever the measurement, tags and fields, the encoded
// line parses (with InfluxData's own line-protocol parser) back to the
// sanitised values.
func FuzzLineProtocol(f *testing.F) {
	f.Add("exanet.bandwidth", "path", "router x", "text", "a \"b\" \\ c", 1.5, int64(3))
	f.Add("m,x", "k=1", "v,2", "s", "\n\r\t", -0.0, int64(-1))
	f.Add("#m", "a\\", "\\", "f\\", "\\", 1e300, int64(0))
	f.Fuzz(func(t *testing.T, meas, tk, tv, sk, sv string, fv float64, iv int64) {
		if meas == "" || tk == "" || sk == "" {
			return
		}
		for _, s := range []string{meas, tk, tv, sk, sv} {
			if !utf8.ValidString(s) {
				return // InfluxDB stores bytes; the reference parser wants UTF-8
			}
		}
		if sk == "f" || sk == "i" {
			return
		}
		p := Point{Measurement: meas, Time: time.Unix(0, 12345)}
		p.SetTag(tk, tv)
		p.AddString(sk, sv)
		floatOK := p.AddFloat("f", fv)
		p.AddInt("i", iv)
		line := p.AppendLine(nil)
		if bytes.ContainsAny(line, "\n\r") {
			t.Fatalf("line break in %q", line)
		}
		h := lp.NewMetricHandler()
		parser := lp.NewParser(h)
		ms, err := parser.Parse(append(line, '\n'))
		if err != nil {
			// The reference parser refuses some names InfluxDB takes
			// (e.g. measurement names that only hold escapes); the
			// server tests cover what is sent. Keys must still parse
			// when they are plain.
			if isPlain(meas) && isPlain(tk) && isPlain(tv) && isPlain(sk) {
				t.Fatalf("%q: %v", line, err)
			}
			return
		}
		if len(ms) != 1 {
			t.Fatalf("%q parsed to %d metrics", line, len(ms))
		}
		m := ms[0]
		tags := map[string]string{}
		for _, tg := range m.TagList() {
			tags[tg.Key] = tg.Value
		}
		fields := map[string]any{}
		for _, fl := range m.FieldList() {
			fields[fl.Key] = fl.Value
		}
		wantMeas := SanitizeKey(meas)
		if strings.HasPrefix(meas, "#") {
			wantMeas = "_" + wantMeas
		}
		if m.Name() != wantMeas {
			t.Errorf("measurement %q read back as %q", meas, m.Name())
		}
		if tv != "" {
			if got := tags[SanitizeKey(tk)]; got != SanitizeKey(tv) {
				t.Errorf("tag %q=%q read back as %q", tk, tv, got)
			}
		}
		if got, ok := fields[SanitizeKey(sk)]; !ok || got != SanitizeString(sv) {
			t.Errorf("string field %q read back as %q, want %q (line %q)", sv, got, SanitizeString(sv), line)
		}
		if got := fields["i"]; got != iv {
			t.Errorf("int field %d read back as %v", iv, got)
		}
		if floatOK {
			if got := fields["f"]; got != fv {
				t.Errorf("float field %v read back as %v", fv, got)
			}
		}
		if m.Time().UnixNano() != 12345 {
			t.Errorf("time %d", m.Time().UnixNano())
		}
	})
}

func isPlain(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return false
		}
	}
	return s != ""
}

// FuzzParseSegment: any file in pending/ is either a valid segment (whose
// re-encoding is the same bytes) or refused with an error; never a panic.
func FuzzParseSegment(f *testing.F) {
	f.Add(EncodeSegment("run-1", [][]byte{[]byte("m v=1 1"), []byte("m v=2 2")}))
	f.Add(EncodeSegment("", nil))
	f.Add([]byte("#labrunner-spool v1 run=x points=1 crc32c=00000000\nm v=1 1\n"))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		seg, err := ParseSegment(data)
		if err != nil {
			return
		}
		for _, l := range seg.Lines {
			if len(l) == 0 || l[0] == '#' || bytes.IndexByte(l, '\n') >= 0 {
				t.Fatalf("accepted line %q", l)
			}
		}
		again, err := ParseSegment(EncodeSegment(seg.Run, seg.Lines))
		if err != nil || len(again.Lines) != len(seg.Lines) {
			t.Fatalf("re-encoded segment: %v", err)
		}
	})
}

// A points file is taken only when its first line is exactly the
// fingerprint of the run directory's logs; anything else is ignored (the
// points are rebuilt), never a panic.
func FuzzReadPointsFile(f *testing.F) {
	dir := f.TempDir()
	os.WriteFile(filepath.Join(dir, results.RunFile), []byte(`{"id":"r"}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, results.MeasurementsFile), []byte(`{"metric":"m","value":1}`+"\n"), 0o644)
	fp, err := fingerprint(dir)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(pointsMagic + fp + "\nm value=1 1\n"))
	f.Add([]byte(pointsMagic + "\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, PointsFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		body, ok := readPointsFile(dir)
		head := pointsMagic + fp + "\n"
		if ok != bytes.HasPrefix(data, []byte(head)) {
			t.Fatalf("taken %v for a file starting %q", ok, data[:min(len(data), 80)])
		}
		if ok && !bytes.Equal(body, data[len(head):]) {
			t.Fatal("body is not what follows the header")
		}
	})
}
