//go:build !unix

package openflow

import "os/exec"

// setProcessGroup leaves the default: cancellation kills the script only.
func setProcessGroup(*exec.Cmd) {}
