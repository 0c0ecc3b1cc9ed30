//go:build race

package openflow_test

// raceEnabled: the tests are built with the race detector, whose
// instrumentation slows the interpreter about fivefold.
const raceEnabled = true
