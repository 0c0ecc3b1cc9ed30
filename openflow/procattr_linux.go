package openflow

import "syscall"

// setParentDeathSignal kills the script when the worker process dies
// (kill -9 included), so that a crashed worker leaves no script running
// beside the worker that takes its runs over.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
