package postgres_test

import (
	"testing"

	"github.com/openworkflow-go/openworkflow/backend/postgres"
)

// TestIdempotencyLockKeyMatchesOpenWorkflow: keyed creates of both SDKs
// on one database serialize on the same advisory lock, so the key is
// OpenWorkflow's JSON.stringify({namespaceId, workflowName,
// idempotencyKey}), which escapes only quotes, backslashes and control
// characters.
func TestIdempotencyLockKeyMatchesOpenWorkflow(t *testing.T) {
	got := postgres.IdempotencyLockKey("default", "a<b>&\u2028", "q\"\\\n\x01é")
	want := `{"namespaceId":"default","workflowName":"a<b>&` + "\u2028" + `","idempotencyKey":"q\"\\\n\u0001é"}`
	if got != want {
		t.Errorf("lock key = %s, want %s", got, want)
	}
}
