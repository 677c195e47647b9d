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
