// Package pollpty opens pseudo-terminals whose master end the Go runtime's
// poller serves: the emulated boards' serial ports, and the tests that play
// a device behind a port.
package pollpty

import (
	"fmt"
	"os"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Open opens a pseudo-terminal. master is a non-blocking, close-on-exec
// descriptor of the master end: creack/pty leaves the master blocking (its
// Fd call), and a blocking master ignores read deadlines and keeps a Read
// going through Close. slave is the open slave end, whose Name is the path
// a port opens; while it stays open, reads of the master do not fail with
// EIO between other openers' open and close.
func Open() (master, slave *os.File, err error) {
	m, s, err := pty.Open()
	if err != nil {
		return nil, nil, err
	}
	fd, err := unix.Dup(int(m.Fd()))
	m.Close()
	if err != nil {
		s.Close()
		return nil, nil, fmt.Errorf("duplicate the master: %w", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		s.Close()
		return nil, nil, fmt.Errorf("make the master non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), s, nil
}
