//go:build !unix

package program

import "os/exec"

// ownProcessGroup: without process groups, the context's cancellation kills
// the tool itself (exec.CommandContext's default).
func ownProcessGroup(cmd *exec.Cmd) {}
