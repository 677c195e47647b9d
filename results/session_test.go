package results

import (
	"testing"
	"time"
)

// A run resumed hours after it finished (or crashed) has worked for its
// sessions' lengths, not for the hours between them.
func TestWorkedCountsSessionsNotGaps(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	ptr := func(t time.Time) *time.Time { return &t }

	// Finished after 10 minutes, resumed 11 hours later for 1 minute.
	r := Run{Start: t0, Sessions: []Session{{Start: t0}}}
	r.End, r.Sessions[0].End = ptr(at(10*time.Minute)), ptr(at(10*time.Minute))
	if w, ok := r.Worked(); !ok || w != 10*time.Minute {
		t.Fatalf("one session: worked %v, %v; want 10m", w, ok)
	}
	r.BeginSession(at(11*time.Hour), at(10*time.Minute))
	if _, ok := r.Worked(); ok || r.Status != "running" || r.Resumes != 1 {
		t.Fatalf("a resumed run is running again: worked ok %v, status %q, resumes %d", ok, r.Status, r.Resumes)
	}
	end := at(11*time.Hour + time.Minute)
	r.End, r.Sessions[1].End = &end, &end
	if w, _ := r.Worked(); w != 11*time.Minute {
		t.Errorf("finished, resumed 11 h later for a minute: worked %v, want 11m (wall %v)", w, r.End.Sub(r.Start))
	}

	// Crashed (no End) after its last write at 5 minutes; resumed.
	c := Run{Start: t0, Sessions: []Session{{Start: t0}}}
	c.BeginSession(at(2*time.Hour), at(5*time.Minute))
	end = at(2*time.Hour + 3*time.Minute)
	c.End, c.Sessions[1].End = &end, &end
	if w, _ := c.Worked(); w != 8*time.Minute {
		t.Errorf("crashed at 5m, resumed for 3m: worked %v, want 8m", w)
	}

	// A run.json from before sessions were recorded.
	o := Run{Start: t0, End: ptr(at(7 * time.Minute))}
	if w, _ := o.Worked(); w != 7*time.Minute {
		t.Errorf("no sessions recorded: worked %v, want End - Start = 7m", w)
	}
	o.BeginSession(at(time.Hour), time.Time{})
	if len(o.Sessions) != 2 || o.Sessions[0].End == nil || !o.Sessions[0].End.Equal(at(7*time.Minute)) {
		t.Errorf("resuming a run without sessions: %+v, want its first span kept", o.Sessions)
	}
}
