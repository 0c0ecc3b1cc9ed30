//go:build unix && !linux

package openflow

import "syscall"

// setParentDeathSignal does nothing where there is no parent-death signal.
func setParentDeathSignal(*syscall.SysProcAttr) {}
