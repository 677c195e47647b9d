package exanet

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// FuzzParseCoord: any string either fails or yields a coordinate in range
// whose rendered forms parse back to it; ParseLattice likewise.
func FuzzParseCoord(f *testing.F) {
	for _, s := range []string{"0,0,0", "(1,2,3)", " ( 1 , 0 , 255 ) ", "1,2", "-1,0,0", "256,0,0", "a,b,c", "((1,2,3))", "1,2,3)", "9999999999999999999999,0,0", "+1,0,0", "0x1,0,0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCoord(s)
		if err == nil {
			if c.X < 0 || c.Y < 0 || c.Z < 0 || c.X >= MaxSide || c.Y >= MaxSide || c.Z >= MaxSide {
				t.Fatalf("ParseCoord(%q) = %v, out of range", s, c)
			}
			for _, r := range []string{c.Param(), c.String()} {
				back, err := ParseCoord(r)
				if err != nil || back != c {
					t.Fatalf("ParseCoord(%q) = %v; %q parses to %v, %v", s, c, r, back, err)
				}
			}
		} else if !strings.Contains(err.Error(), "coordinate") {
			t.Fatalf("error %q does not say what failed", err)
		}
		l, err := ParseLattice(s)
		if err == nil {
			if l.X < 1 || l.Y < 1 || l.Z < 1 || l.X > MaxSide || l.Y > MaxSide || l.Z > MaxSide {
				t.Fatalf("ParseLattice(%q) = %v, out of range", s, l)
			}
		}
	})
}

// FuzzParseOrder: an accepted order is a permutation that renders back to
// itself in upper case.
func FuzzParseOrder(f *testing.F) {
	for _, s := range []string{"XYZ", "zyx", "XXZ", "XY", "", " yzx ", "XYZW", "ẋyz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseOrder(s)
		if err != nil {
			return
		}
		var seen [3]bool
		for _, d := range o {
			if d < X || d > Z || seen[d] {
				t.Fatalf("ParseOrder(%q) = %v, not a permutation", s, o)
			}
			seen[d] = true
		}
		if got := strings.ToUpper(strings.TrimSpace(s)); got != o.String() {
			t.Fatalf("ParseOrder(%q) = %v", s, o)
		}
	})
}

// FuzzPredict drives every parameter parser through Predict: it never
// panics, errors say which model failed, and accepted settings give unique,
// JSON-serialisable expectations whose paths end at their destination and
// whose values lie inside their bounds.
func FuzzPredict(f *testing.F) {
	f.Add("2,2,1", "XYZ", "32,64,512", "1,2", "", "", "router,router2x,link")
	f.Add("4,3,2", "ZYX", "1,17", "1,6", "3,0,1", "1,2,0", "link")
	f.Add("1,1,1", "xyz", "", "", "", "", "")
	f.Add("2,2", "XY", "0", "0", "a", "", "bus")
	f.Add("256,256,256", "YZX", "512", "765", "255,0,255", "0,255,0", "router2x")
	f.Fuzz(func(t *testing.T, lattice, order, payloads, hops, src, dst, path string) {
		set := map[string]string{"lattice": lattice, "order": order, "payloads": payloads, "hops": hops, "path": path}
		if src != "" {
			set["src"] = src
		}
		if dst != "" {
			set["dst"] = dst
		}
		es, err := Model{}.Predict(set)
		if err != nil {
			if !strings.HasPrefix(err.Error(), Name+":") {
				t.Fatalf("error %q does not name the model", err)
			}
			return
		}
		keys := map[string]bool{}
		for _, e := range es {
			if keys[e.Key()] {
				t.Fatalf("duplicate key %s", e.Key())
			}
			keys[e.Key()] = true
			if e.Min != nil && e.Max != nil && !(*e.Min <= e.Value && e.Value <= *e.Max) {
				t.Fatalf("%s: value %v outside its band [%v, %v]", e.Key(), e.Value, *e.Min, *e.Max)
			}
			if lo, hi := e.Bounds(); e.Text == "" && (math.IsNaN(lo) || math.IsNaN(hi) || lo > hi || lo < 0) {
				t.Fatalf("%s: bounds [%v, %v]", e.Key(), lo, hi)
			}
			if e.Metric == "exanet.dor_path" {
				d, err := ParseCoord(e.Params["dst"])
				if err != nil || !strings.HasSuffix(e.Text, d.String()) {
					t.Fatalf("path %q does not end at %q", e.Text, e.Params["dst"])
				}
			}
		}
		if _, err := json.Marshal(es); err != nil {
			t.Fatalf("not JSON-serialisable: %v", err)
		}
	})
}
