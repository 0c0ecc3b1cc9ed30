//go:build unix

package openflow

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts the script in a process group of its own and
// makes cancellation (a timeout, a canceled run) kill the whole group, so
// a script's own children do not outlive it.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
