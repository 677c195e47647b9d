package param

import (
	"strings"
	"testing"
)

func TestValuesAndErrors(t *testing.T) {
	if n, err := Int(" 7 ", 1, 9); n != 7 || err != nil {
		t.Errorf("Int: %d, %v", n, err)
	}
	if v, err := Float("0.25", 0, 1); v != 0.25 || err != nil {
		t.Errorf("Float: %g, %v", v, err)
	}
	if l, err := Ints("3, 1,2", 1, 3); err != nil || len(l) != 3 || l[0] != 3 || l[2] != 2 {
		t.Errorf("Ints: %v, %v", l, err)
	}
	if l, err := Floats(" ", 0, 1); l != nil || err != nil {
		t.Errorf("empty list: %v, %v", l, err)
	}
	for in, want := range map[string]string{"x": `"x" is not a whole number`, "0": "0 is outside 1..9", "2,2": "2 is listed twice"} {
		if _, err := Ints(in, 1, 9); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Ints(%q): %v, want %q", in, err, want)
		}
	}
	for in, want := range map[string]string{"NaN": `"NaN" is not a number`, "Inf": `"Inf" is not a number`, "2": "2 is outside 0..1", "0.5,0.5": "0.5 is listed twice"} {
		if _, err := Floats(in, 0, 1); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Floats(%q): %v, want %q", in, err, want)
		}
	}
}

func FuzzLists(f *testing.F) {
	f.Add("1,2,3")
	f.Add(" ,x")
	f.Fuzz(func(t *testing.T, s string) {
		l, _ := Ints(s, -5, 5)
		seen := map[int]bool{}
		for _, n := range l {
			if n < -5 || n > 5 || seen[n] {
				t.Fatalf("Ints(%q) = %v", s, l)
			}
			seen[n] = true
		}
		if fs, err := Floats(s, 0.001, 10); err == nil {
			for _, v := range fs {
				if !(v >= 0.001 && v <= 10) {
					t.Fatalf("Floats(%q) = %v", s, fs)
				}
			}
		}
	})
}

func TestSettings(t *testing.T) {
	specs := []Spec{{"payloads", "64"}, {"hops", "1"}, {"lattice", ""}}
	got, err := Settings("m", specs, map[string]string{"hops": "2"})
	if err != nil || got["payloads"] != "64" || got["hops"] != "2" {
		t.Fatalf("Settings: %v, %v", got, err)
	}
	if _, ok := got["lattice"]; ok {
		t.Errorf("an optional parameter without default appeared: %v", got)
	}
	for set, want := range map[string][]string{
		"payload": {`m: unknown parameter "payload" (allowed: hops, lattice, payloads)`, `did you mean "payloads"?`},
		"latice":  {`did you mean "lattice"?`},
		"zzz":     {`unknown parameter "zzz"`},
	} {
		_, err := Settings("m", specs, map[string]string{set: "1"})
		if err == nil {
			t.Fatalf("%s accepted", set)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want %q", set, err, w)
			}
		}
		if set == "zzz" && strings.Contains(err.Error(), "did you mean") {
			t.Errorf("zzz: %v suggests a name that is not close", err)
		}
	}
	_, err = Settings("m", specs, map[string]string{"hop": "1", "payload": "2"})
	if err == nil || !strings.Contains(err.Error(), `"hops" for "hop"`) || !strings.Contains(err.Error(), `"payloads" for "payload"`) {
		t.Errorf("two slips: %v", err)
	}
}

func TestCountSetNames(t *testing.T) {
	for in, want := range map[string]int{"30000": 30000, "3e4": 30000, " 1e5 ": 100000} {
		if n, err := Count(in, 1, 1<<30); n != want || err != nil {
			t.Errorf("Count(%q) = %d, %v", in, n, err)
		}
	}
	for in, want := range map[string]string{"1.5": "not a whole number", "1e12": "outside", "x": "not a whole number", "0": "outside"} {
		if _, err := Count(in, 1, 1<<30); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Count(%q): %v, want %q", in, err, want)
		}
	}
	if v, err := Uint64(" 18446744073709551615"); v != 1<<64-1 || err != nil {
		t.Errorf("Uint64: %d %v", v, err)
	}
	if _, err := Uint64("-3"); err == nil {
		t.Error("Uint64(-3) accepted")
	}
	if s, err := IntSet("8, 1,8", 1, 9); err != nil || len(s) != 2 || s[0] != 1 || s[1] != 8 {
		t.Errorf("IntSet: %v %v", s, err)
	}
	if _, err := IntSet("1,,2", 1, 9); err == nil {
		t.Error("IntSet with an empty item accepted")
	}
	known := []string{"uniform", "bursty", "nonuniform"}
	if s, err := Names("nonuniform, uniform,uniform", known, "all"); err != nil || len(s) != 2 || s[0] != "uniform" || s[1] != "nonuniform" {
		t.Errorf("Names: %v %v", s, err)
	}
	if s, err := Names("bursty,all", known, "all"); err != nil || len(s) != 3 {
		t.Errorf("Names all: %v %v", s, err)
	}
	if _, err := Names("unifrom", known, "all"); err == nil || !strings.Contains(err.Error(), `did you mean "uniform"?`) {
		t.Errorf("Names slip: %v", err)
	}
	if s, err := Names(" ", known, "all"); err != nil || s != nil {
		t.Errorf("Names empty: %v %v", s, err)
	}
}

func FuzzSettings(f *testing.F) {
	f.Add("payload", "1")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, k, v string) {
		specs := []Spec{{"payloads", "64"}, {"hops", ""}}
		got, err := Settings("m", specs, map[string]string{k: v})
		if (k == "payloads" || k == "hops") != (err == nil) {
			t.Fatalf("key %q: %v", k, err)
		}
		if err == nil && got[k] != v {
			t.Fatalf("key %q: got %v", k, got)
		}
		_ = Closest(k, []string{"payloads", "hops", ""})
		_, _ = Names(k, []string{"a", "b"}, "all")
		_, _ = IntSet(k, -3, 3)
		_, _ = Count(k, 0, 1000)
		if l, err := List(k, func(f string) (string, error) { return f, nil }); err == nil {
			seen := map[string]bool{}
			for _, x := range l {
				if seen[x] {
					t.Fatalf("List(%q) = %v: an item twice", k, l)
				}
				seen[x] = true
			}
		}
	})
}
