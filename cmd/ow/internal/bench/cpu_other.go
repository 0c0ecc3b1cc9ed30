//go:build !unix

package bench

import "time"

// processCPU cannot be read on this system: the CPU metric is left out.
func processCPU() (time.Duration, bool) { return 0, false }
