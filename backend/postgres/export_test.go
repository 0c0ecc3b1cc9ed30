package postgres

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Hooks for the external tests of this package.

// IdempotencyLockKey exposes idempotencyLockKey.
var IdempotencyLockKey = idempotencyLockKey

// ListenerPID returns the server PID of b's LISTEN connection, 0 when it is
// not connected.
func ListenerPID(b *Backend) uint32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.listener == nil {
		return 0
	}
	return b.listener.pid.Load()
}

// CopyCreateWorkflowRuns is the COPY alternative to CreateWorkflowRuns
// (unkeyed runs only), kept for the benchmark that chose unnest: COPY into
// a temporary table, then one INSERT … SELECT from it.
func CopyCreateWorkflowRuns(ctx context.Context, b *Backend, ps []backend.CreateWorkflowRunParams) ([]*backend.WorkflowRun, error) {
	idx := make([]int, len(ps))
	for i := range idx {
		idx[i] = i
	}
	_, args := b.runArrays(ps, idx, &escapes{}) // benchmark inputs hold no U+0000
	var runs []*backend.WorkflowRun
	err := b.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE ow_new_runs (
  n int, id text, workflow_name text, version text, idempotency_key text, config text, context text,
  input text, parent_ns text, parent_id text, available_at timestamptz, deadline_at timestamptz) ON COMMIT DROP`); err != nil {
			return err
		}
		rows := make([][]any, len(ps))
		for k := range ps {
			row := []any{k}
			for _, a := range args[1:] {
				row = append(row, reflect.ValueOf(a).Index(k).Interface())
			}
			rows[k] = row
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"ow_new_runs"},
			[]string{"n", "id", "workflow_name", "version", "idempotency_key", "config", "context", "input",
				"parent_ns", "parent_id", "available_at", "deadline_at"}, pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		q := withSchema(`
WITH inserted AS (
  INSERT INTO {{schema}}."workflow_runs" AS wr (
    "namespace_id", "id", "workflow_name", "version", "status", "idempotency_key",
    "config", "context", "input", "attempts",
    "parent_step_attempt_namespace_id", "parent_step_attempt_id",
    "available_at", "deadline_at", "created_at", "updated_at"
  )
  SELECT $1, p."id", p."workflow_name", p."version", 'pending', p."idempotency_key",
    COALESCE(p."config", '{}')::jsonb, p."context"::jsonb, p."input"::jsonb, 0,
    p."parent_ns", p."parent_id",
    COALESCE(p."available_at", {{now}}), p."deadline_at", {{now}}, {{now}}
  FROM ow_new_runs AS p
  RETURNING wr.*
)
SELECT {{run_columns}} FROM inserted AS wr JOIN ow_new_runs AS o ON o."id" = wr."id" ORDER BY o."n"`, b.schema)
		r, err := tx.Query(ctx, q, b.namespace)
		if err != nil {
			return err
		}
		if runs, err = pgx.CollectRows(r, scanRun); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, b.q.NotifyWorkIfDue, b.namespace, earliestAvailable(ps, idx))
		return err
	})
	return runs, err
}

// withSchema replaces {{schema}} in a test's own SQL with the quoted schema.
func withSchema(q, schema string) string {
	return strings.ReplaceAll(q, "{{schema}}", quoteIdent(schema))
}

// mustLoadQueries is loadQueries for tests.
func mustLoadQueries(t testing.TB, schema string) queries {
	t.Helper()
	q, err := loadQueries(schema)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// CheckServerVersion exposes checkServerVersion.
var CheckServerVersion = checkServerVersion

// SupportedServerVersion exposes supportedServerVersion.
var SupportedServerVersion = supportedServerVersion
