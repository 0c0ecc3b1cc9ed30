package openworkflow_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// lockedBuffer is a bytes.Buffer safe for the worker's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Issue 19, item 11: a worker whose declared limits differ from the
// stored ones warns, naming both and who declared each, and the
// replacement is stored for `ow limits list` and the dashboard.
func TestAWorkerDeclaringOtherLimitsWarnsAndTheReplacementIsStored(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend.Backend) {
		body := func(ctx ow.Context, _ int) (int, error) { return 1, nil }
		var firstLog, secondLog lockedBuffer
		startWorker(t, b, ow.WorkerOptions{ID: "old-deploy", Logger: slog.New(slog.NewTextHandler(&firstLog, nil))},
			ow.Define(ow.Spec{Name: "contested", Version: "v1", Limits: ow.Limits{Concurrency: 2}}, body))
		if strings.Contains(firstLog.String(), "level=WARN") {
			t.Errorf("the first worker to store the limits warned:\n%s", firstLog.String())
		}
		ctx := startWorker(t, b, ow.WorkerOptions{ID: "new-deploy", Logger: slog.New(slog.NewTextHandler(&secondLog, nil))},
			ow.Define(ow.Spec{Name: "contested", Version: "v2", Limits: ow.Limits{Concurrency: 5}}, body))

		var warning string
		for _, line := range strings.Split(secondLog.String(), "\n") {
			if strings.Contains(line, "level=WARN") && strings.Contains(line, "workflow=contested") {
				warning = line
			}
		}
		for _, want := range []string{"Concurrency:5", "Concurrency:2", "worker new-deploy (contested v2)", "worker old-deploy (contested v1)"} {
			if !strings.Contains(warning, want) {
				t.Errorf("the second worker's warning %q does not name %q; its log:\n%s", warning, want, secondLog.String())
			}
		}
		got, err := ow.NewClient(b).ListWorkflowLimits(ctx)
		if err != nil || len(got) != 1 {
			t.Fatalf("ListWorkflowLimits = %+v, %v", got, err)
		}
		l := got[0]
		if l.Concurrency != 5 || l.DeclaredBy != "worker new-deploy (contested v2)" || l.Replaced == nil ||
			l.Replaced.Concurrency != 2 || l.Replaced.DeclaredBy != "worker old-deploy (contested v1)" {
			t.Fatalf("stored %+v, replaced %+v; want v2's limits and v1's recorded as replaced", l, l.Replaced)
		}
	})
}
