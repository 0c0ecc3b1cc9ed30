package sqlite

import (
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
)

func BenchmarkCreateWorkflowRun(b *testing.B) {
	be, err := Open(b.Context(), b.TempDir()+"/bench.db", Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	for b.Loop() {
		if _, err := be.CreateWorkflowRun(b.Context(), backend.CreateWorkflowRunParams{WorkflowName: "wf"}); err != nil {
			b.Fatal(err)
		}
	}
}
