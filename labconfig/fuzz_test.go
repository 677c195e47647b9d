package labconfig_test

import (
	"errors"
	"testing"

	"github.com/labrunner/labrunner/labconfig"
)

// FuzzParse feeds arbitrary bytes to the lab-file parser: it must never
// panic, and every error it reports must carry the file and a line.
func FuzzParse(f *testing.F) {
	f.Add(labconfig.DefaultSource())
	f.Add([]byte(head))
	f.Add([]byte(head + "links:\n  - {a: \"a:sfp0\", b: \"a:sfp1\", latency_ns: 5}\nplans:\n  - name: p\n    design: exanet\n    boards: [{board: a, params: {coord: [0, 0, 0]}}]\n    tests: [{test: links, tolerance: {rel: 0.1}, deadline: 3s}]\n"))
	f.Add([]byte("lab: t\nboards:\n  - &x\n    name: a\n    <<: *x\n"))
	f.Add([]byte("a: &a [x, *a]\n"))
	f.Add([]byte("lab: [\n"))
	f.Add([]byte("- 1\n- 2\n"))
	k := known()
	f.Fuzz(func(t *testing.T, data []byte) {
		lab, err := labconfig.Parse("f.yaml", data, k)
		if err == nil {
			if lab == nil || lab.Name == "" || len(lab.Boards) == 0 {
				t.Fatalf("accepted an incomplete lab: %+v", lab)
			}
			return
		}
		var errs *labconfig.Errors
		if !errors.As(err, &errs) || len(errs.List) == 0 {
			t.Fatalf("error %T %v is not a non-empty *labconfig.Errors", err, err)
		}
		for _, e := range errs.List {
			if e.Pos.File != "f.yaml" || e.Pos.Line < 1 || e.Msg == "" {
				t.Fatalf("error without position or message: %+v", e)
			}
		}
	})
}
