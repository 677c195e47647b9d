package labconfig

import (
	"strings"
	"testing"
)

func TestParseFault(t *testing.T) {
	cases := []struct {
		in                string
		name, board, link string
		params            map[string]string
		err               string
	}{
		{in: "board-silent@exa-11", name: "board-silent", board: "exa-11"},
		{in: "credit-leak@exa-10:sfp0,every=32", name: "credit-leak", board: "exa-10", link: "exa-10:sfp0", params: map[string]string{"every": "32"}},
		{in: "uart-corrupt@b,rate=0.5,x=1", name: "uart-corrupt", board: "b", params: map[string]string{"rate": "0.5", "x": "1"}},
		{in: "rackwide", name: "rackwide"},
		{in: "", err: "no fault name"},
		{in: "@b", err: "no fault name"},
		{in: "f@", err: "empty board"},
		{in: "f@b:", err: "empty port"},
		{in: "f@b,nokey", err: "not key=value"},
		{in: "f@b,=3", err: "not key=value"},
	}
	for _, c := range cases {
		f, err := ParseFault(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseFault(%q) error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseFault(%q): %v", c.in, err)
			continue
		}
		if f.Name != c.name || f.Board != c.board || f.Link != c.link {
			t.Errorf("ParseFault(%q) = %+v", c.in, f)
		}
		for k, v := range c.params {
			if got := f.Params[k]; len(got.Values) != 1 || got.Values[0] != v {
				t.Errorf("ParseFault(%q) param %s = %v, want %s", c.in, k, got.Values, v)
			}
		}
	}
}

func FuzzParseFault(f *testing.F) {
	for _, s := range []string{"a@b:c,k=v", "x", "@", ",,", "a@b,c=d,e=f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		flt, err := ParseFault(s)
		if err != nil {
			if !strings.Contains(err.Error(), "--fault") {
				t.Fatalf("error does not name the flag: %v", err)
			}
			return
		}
		if flt.Name == "" {
			t.Fatalf("accepted %q without a name", s)
		}
		if flt.Link != "" && !strings.HasPrefix(flt.Link, flt.Board+":") {
			t.Fatalf("link %q not on board %q", flt.Link, flt.Board)
		}
	})
}
