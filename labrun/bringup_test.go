package labrun

import (
	"context"
	"errors"
	"testing"
)

// A bring-up asked for nothing sensible is refused before a run directory
// is made or a board touched: a configuration error (ExitConfig).
func TestBringupRefusesBadOptionsBeforeAnything(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]BringupOptions{
		"no boards":          {},
		"boards and all":     {Boards: []string{"a0"}, All: true},
		"design without one": {All: true, Design: "exanet"},
		"unknown stage":      {All: true, From: "no-such-stage"},
		"bad deadline":       {All: true, Deadlines: []string{"bootstrap=soon"}},
		"unknown fault":      {All: true, Faults: []string{"no-such-fault"}},
	} {
		t.Run(name, func(t *testing.T) {
			o.LabFile, o.Out = twoGroups, t.TempDir()
			rep, err := Bringup(context.Background(), o)
			var e *Error
			if !errors.As(err, &e) || e.Code != ExitConfig {
				t.Fatalf("report %+v, error %v; want an *Error with exit %d", rep, err, ExitConfig)
			}
			if dirs := runDirs(t, o.Out); len(dirs) != 0 {
				t.Errorf("run directories made: %v", dirs)
			}
		})
	}
}
