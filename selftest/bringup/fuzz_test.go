package bringup

import (
	"strings"
	"testing"

	"github.com/labrunner/labrunner/labconfig"
)

// FuzzParseStageAndDeadline: the command line's stage names and
// STAGE=DURATION deadlines are read or refused, never half applied: a
// refused deadline leaves every stage's deadline as it was, an accepted one
// changes exactly its stage's to a positive duration.
func FuzzParseStageAndDeadline(f *testing.F) {
	for _, s := range []string{"bootstrap=3m", "TimeSync = 90s", "power", "=1s", "links=-1s", "scratch=1h2m", "loopback=0s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if st, err := ParseStage(s); err == nil {
			if !strings.EqualFold(strings.TrimSpace(s), st.String()) {
				t.Fatalf("ParseStage(%q) = %s", s, st)
			}
			if back, err := ParseStage(st.String()); err != nil || back != st {
				t.Fatalf("stage %s does not read back (%v)", st, err)
			}
		}
		before := DefaultDeadlines(labconfig.Deadlines{})
		d := before
		if err := d.Set(s); err != nil {
			if d != before {
				t.Fatalf("refused %q yet changed the deadlines", s)
			}
			return
		}
		name, _, _ := strings.Cut(s, "=")
		st, err := ParseStage(name)
		if err != nil {
			t.Fatalf("accepted %q whose stage does not parse: %v", s, err)
		}
		for i := range d {
			switch {
			case Stage(i) == st && d[i] <= 0:
				t.Fatalf("%q set %s to %v", s, st, d[i])
			case Stage(i) != st && d[i] != before[i]:
				t.Fatalf("%q changed %s", s, Stage(i))
			}
		}
	})
}
