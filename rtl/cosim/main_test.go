package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestUsage: bad arguments exit 2 with the usage or the path named, before
// the simulator is built (these run without Verilator).
func TestUsage(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-dir", "cosim.yaml")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--baud", "0"}, "usage: cosim"},
		{[]string{"--baud", "-9600"}, "usage: cosim"},
		{[]string{"extra"}, "usage: cosim"},
		{[]string{"--bogus"}, "flag provided but not defined"},
		{[]string{"--lab", missing}, "no directory " + filepath.Dir(missing)},
	} {
		var out, errb strings.Builder
		if code := run(c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) || out.Len() != 0 {
			t.Errorf("cosim %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", strings.Join(c.args, " "), code, out.String(), errb.String(), c.want)
		}
	}
}
