//go:build unix

package program

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// ownProcessGroup starts the tool as the leader of a new process group and
// makes the context's cancellation kill the whole group: vendor tools run
// helpers (Quartus' jtagd client, Vivado's Tcl shells) that a kill of the
// leader alone would leave holding the cable.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// Until Wait returns, the leader is at least a zombie, so its pid
		// (and the group id) cannot have been reused.
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
}
