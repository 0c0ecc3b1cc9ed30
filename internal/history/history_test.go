package history

import (
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
)

func TestRunningOnly(t *testing.T) {
	attempt := func(id, name string, kind backend.StepKind, status backend.StepStatus) backend.StepAttempt {
		return backend.StepAttempt{ID: id, StepName: name, Kind: kind, Status: status}
	}
	for _, c := range []struct {
		name     string
		attempts []backend.StepAttempt
		want     bool
	}{
		{"nothing running", []backend.StepAttempt{attempt("a", "f", backend.StepFunction, backend.StepCompleted)}, true},
		{"a sleep", []backend.StepAttempt{attempt("a", "nap", backend.StepSleep, backend.StepRunning)}, true},
		{"a sleep beside a signal wait", []backend.StepAttempt{
			attempt("a", "go", backend.StepSignalWait, backend.StepRunning),
			attempt("b", "nap", backend.StepSleep, backend.StepRunning)}, false},
		{"a sleep after a signal wait that ended", []backend.StepAttempt{
			attempt("a", "go", backend.StepSignalWait, backend.StepRunning),
			attempt("a", "go", backend.StepSignalWait, backend.StepCompleted),
			attempt("b", "nap", backend.StepSleep, backend.StepRunning)}, true},
		{"a child run", []backend.StepAttempt{attempt("a", "child", backend.StepWorkflow, backend.StepRunning)}, false},
	} {
		if got := New(c.attempts).RunningOnly(backend.StepSleep); got != c.want {
			t.Errorf("%s: RunningOnly(sleep) = %v, want %v", c.name, got, c.want)
		}
	}
}
