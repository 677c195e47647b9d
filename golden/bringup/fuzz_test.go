package bringup

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// docText reads doc.go, the metric contract.
func docText(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "doc.go"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FuzzParseLinks: any string fails with an error saying which link, or
// yields cables whose rendered form parses back to the same cables.
func FuzzParseLinks(f *testing.F) {
	for _, s := range []string{"a=b", "a:sfp0=b:sfp1/5/2/0.01", "p0t0=p1t0,p0t1=p1t1", "a=b/1e6/-1e6", "a=b/0/0/0", " x = y / 3 ",
		"a=b=c", "a:b:c=d", "=", ",", "a=b/1/2/3/4", "a=b/1e400", "a-1.x_y=b/0x10", "\xff=a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ls, err := ParseLinks(s)
		if err != nil {
			if !strings.Contains(err.Error(), "link") {
				t.Fatalf("error %q does not say which link", err)
			}
			return
		}
		parts := make([]string, len(ls))
		for i, l := range ls {
			if l.A == l.B || !validName(l.A) || !validName(l.B) || l.LatencyNS < 0 || l.LatencyNS+l.AsymmetryNS < 0 || l.MOSLoss >= 1 {
				t.Fatalf("ParseLinks(%q) accepted %+v", s, l)
			}
			parts[i] = l.Param()
		}
		back, err := ParseLinks(strings.Join(parts, ","))
		if err != nil || !slices.Equal(back, ls) {
			t.Fatalf("ParseLinks(%q) = %+v; rendered %q parses to %+v, %v", s, ls, strings.Join(parts, ","), back, err)
		}
	})
}

// FuzzPredict drives the topology, fault, failure, clock and number parsers
// through Predict: it never panics, errors name the model, and accepted
// settings give unique, ordered, JSON-serialisable expectations.
func FuzzPredict(f *testing.F) {
	f.Add("", "", "", "", "", "", "", "")
	f.Add("a=b/5/2,b=c,c=a", "a", "", "", "a=b", "b=12.5", "0.001", "rack")
	f.Add("", "p0t0,p1t1", "p0t1", "p1t0", "p0t0", "p0t0=0,p1t0=20000", "0", "prototype")
	f.Add("a:x=b:x,a:y=b:y", "b", "a", "", "a:x=b:x", "", "0.5", "")
	f.Add("a=b/1/2/0.9", "a", "", "", "", "", "", "")
	f.Add("", "p0t0", "", "", "p0t0=p1t0,p0t1", "p0t0=-99999", "1e-9", "prototype")
	f.Fuzz(func(t *testing.T, links, dcn, dead, dying, tsFail, ppm, loss, shoal string) {
		set := map[string]string{"dcn": dcn, "dead": dead, "proxy_dies": dying, "ts_fail": tsFail, "clock_ppm": ppm, "shoal": shoal,
			"config_bytes": "1024"}
		if links != "" {
			set["links"] = links
		}
		if loss != "" {
			set["mos_loss"] = loss
		}
		es, err := Model{}.Predict(set)
		if err != nil {
			if !strings.HasPrefix(err.Error(), Name+":") {
				t.Fatalf("error %q does not name the model", err)
			}
			return
		}
		checkExpectations(t, es)
	})
}

// FuzzParseScalars: the list and number parsers refuse what they cannot
// read and never panic.
func FuzzParseScalars(f *testing.F) {
	for _, s := range []string{"a,b", "a,,b", "p0t0=1.5", "2x4", "48X12", "x4", "1e309", "-0", " 3 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if bs, err := ParseBoards(s); err == nil {
			for _, b := range bs {
				if !validName(b) {
					t.Fatalf("ParseBoards(%q) accepted %q", s, b)
				}
			}
		}
		if m, err := ParsePPM(s); err == nil {
			for b, v := range m {
				if !validName(b) || !(v >= -MaxPPM && v <= MaxPPM) {
					t.Fatalf("ParsePPM(%q) accepted %s=%v", s, b, v)
				}
			}
		}
		if p, q, err := ParseClique(s); err == nil {
			if _, err := Clique(p, q, 1); err == nil && (p < 1 || q < 1) {
				t.Fatalf("Clique(%d, %d) accepted", p, q)
			}
		}
		if fl, err := ParseFailure(s); err == nil {
			for _, b := range fl.Boards {
				if !validName(b) {
					t.Fatalf("ParseFailure(%q) accepted board %q", s, b)
				}
			}
		}
	})
}
