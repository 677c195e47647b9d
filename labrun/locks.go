package labrun

import (
	"log/slog"

	"github.com/labrunner/labrunner/boards/lease"
	"github.com/labrunner/labrunner/labconfig"
)

// DefaultLocks is the lock directory shared by every user of a lab host.
const DefaultLocks = "/tmp/labrunner-locks"

// LocksPath is the lock directory given (--locks), else the lab file's,
// else DefaultLocks.
func LocksPath(given string, lab *labconfig.Lab) string {
	path := given
	if path == "" && lab.Locks != nil && lab.Locks.Dir != "" {
		path = lab.Locks.Dir
	}
	if path == "" {
		path = DefaultLocks
	}
	return path
}

// OpenLocks opens the lock directory LocksPath names; a directory that is
// not safe to share is an *Error with ExitConfig.
func OpenLocks(given string, lab *labconfig.Lab, log *slog.Logger) (*lease.Dir, error) {
	d, err := lease.Open(LocksPath(given, lab), log)
	if err != nil {
		return nil, setupError(err)
	}
	return d, nil
}
