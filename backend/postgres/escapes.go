package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/openworkflow-go/openworkflow/backend"
)

// The record of escaped values (see jsonnul.go for why it exists): a write
// that stores an escaped value records it in openworkflow_go_escaped_json
// in its own transaction (recordEscapes), and a read decodes a value only
// when such a record names its row, its column and its digest
// (decodeRuns, decodeSteps, decodeSignalData).

// The tables whose JSON columns may hold escaped values.
const (
	tableRuns    = "workflow_runs"
	tableSteps   = "step_attempts"
	tableSignals = "workflow_signals"
)

// escapes collects the escaped values one write stores: where each goes
// and its text as sent. The zero value is empty and ready.
type escapes struct {
	namespaces, tables, rows, columns, values []string
}

// json returns raw as a query argument for column of the row id of table in
// namespace ns, as jsonArg (nil or empty is SQL NULL), noting it when
// escaped.
func (e *escapes) json(ns, table, id, column string, raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return e.text(ns, table, id, column, raw)
}

// jsonOr is json with def standing in for nil, as jsonOr.
func (e *escapes) jsonOr(ns, table, id, column string, raw json.RawMessage, def string) any {
	if len(raw) == 0 {
		return def
	}
	return e.text(ns, table, id, column, raw)
}

// jsonText is json as a nullable text array element, as jsonText.
func (e *escapes) jsonText(ns, table, id, column string, raw json.RawMessage) *string {
	if len(raw) == 0 {
		return nil
	}
	s := e.text(ns, table, id, column, raw)
	return &s
}

func (e *escapes) text(ns, table, id, column string, raw json.RawMessage) string {
	stored, escaped := encodeJSON(raw)
	s := string(stored)
	if escaped {
		e.add(ns, table, id, column, s)
	}
	return s
}

// note notes raw as stored in column of the row id of table in namespace
// ns if it must be escaped, without making the query argument (ApplyWrites
// makes its own).
func (e *escapes) note(ns, table, id, column string, raw json.RawMessage) {
	if stored, escaped := encodeJSON(raw); escaped {
		e.add(ns, table, id, column, string(stored))
	}
}

func (e *escapes) add(ns, table, id, column, value string) {
	e.namespaces = append(e.namespaces, ns)
	e.tables = append(e.tables, table)
	e.rows = append(e.rows, id)
	e.columns = append(e.columns, column)
	e.values = append(e.values, value)
}

// empty reports whether the write stores nothing escaped (the common case).
func (e *escapes) empty() bool { return e == nil || len(e.values) == 0 }

// recordEscapes records the write's escaped values; it must run in the
// write's transaction, after the write.
func (b *Backend) recordEscapes(ctx context.Context, tx pgx.Tx, e *escapes) error {
	if e.empty() {
		return nil
	}
	_, err := tx.Exec(ctx, b.q.RecordEscapes, e.recordArgs()...)
	if err != nil {
		return fmt.Errorf("record the escaped JSON values: %w", err)
	}
	return nil
}

// recordArgs are record_escapes's arguments.
func (e *escapes) recordArgs() []any {
	return []any{e.namespaces, e.tables, e.rows, e.columns, e.values}
}

// queueRecord adds the record of the escaped values to a batch sent as one
// implicit transaction, after its writes; the caller reads its result
// (an Exec) after theirs.
func (b *Backend) queueRecord(batch *pgx.Batch, e *escapes) bool {
	if e.empty() {
		return false
	}
	batch.Queue(b.q.RecordEscapes, e.recordArgs()...)
	return true
}

// withEscapes runs fn, a write that stores e's values, on the pool when
// nothing is escaped (no transaction more than the statement's own), else
// in a transaction that also records them.
func (b *Backend) withEscapes(ctx context.Context, e *escapes, fn func(q querier) error) error {
	if e.empty() {
		return fn(b.pool)
	}
	return b.inTx(ctx, func(tx pgx.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return b.recordEscapes(ctx, tx, e)
	})
}

// candidate is a JSON value read back that may be one Go stored escaped.
type candidate struct {
	ns, table, row, column string
	raw                    *json.RawMessage
}

// candidates collects the values read back that may need decoding.
type candidates []candidate

func (c *candidates) add(ns, table, row, column string, raw *json.RawMessage) {
	if mayBeEscaped(*raw) {
		*c = append(*c, candidate{ns, table, row, column, raw})
	}
}

// decode replaces each candidate that Go stored escaped — the record names
// its row, its column and the digest of its text — by its decoded value;
// the others are kept as read. A schema without the record table (its go
// migration 3 not applied) holds no escaped value.
func (b *Backend) decode(ctx context.Context, cs candidates) error {
	if len(cs) == 0 {
		return nil
	}
	byNS := make(map[string][]int)
	for i, c := range cs {
		byNS[c.ns] = append(byNS[c.ns], i)
	}
	for ns, idx := range byNS {
		tables, rows, columns := make([]string, len(idx)), make([]string, len(idx)), make([]string, len(idx))
		digests := make([][]byte, len(idx))
		for k, i := range idx {
			c := cs[i]
			sum := sha256.Sum256(*c.raw)
			tables[k], rows[k], columns[k], digests[k] = c.table, c.row, c.column, sum[:]
		}
		found, err := collectInts(b.pool.Query(ctx, b.q.EscapedValues, ns, tables, rows, columns, digests))
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table
			return nil
		}
		if err != nil {
			return fmt.Errorf("look up escaped JSON values: %w", err)
		}
		for _, n := range found {
			c := cs[idx[n-1]]
			*c.raw = decodeEscaped(*c.raw)
		}
	}
	return nil
}

func collectInts(rows pgx.Rows, err error) ([]int64, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// decodeRuns decodes the escaped values of runs read back.
func (b *Backend) decodeRuns(ctx context.Context, runs ...*backend.WorkflowRun) error {
	var cs candidates
	for _, r := range runs {
		if r == nil {
			continue
		}
		cs.add(r.NamespaceID, tableRuns, r.ID, "config", &r.Config)
		cs.add(r.NamespaceID, tableRuns, r.ID, "context", &r.Context)
		cs.add(r.NamespaceID, tableRuns, r.ID, "input", &r.Input)
		cs.add(r.NamespaceID, tableRuns, r.ID, "output", &r.Output)
		cs.add(r.NamespaceID, tableRuns, r.ID, "error", &r.Error)
	}
	return b.decode(ctx, cs)
}

// decodeSteps decodes the escaped values of step attempts read back.
func (b *Backend) decodeSteps(ctx context.Context, steps ...*backend.StepAttempt) error {
	var cs candidates
	for _, s := range steps {
		if s == nil {
			continue
		}
		cs.add(s.NamespaceID, tableSteps, s.ID, "config", &s.Config)
		cs.add(s.NamespaceID, tableSteps, s.ID, "context", &s.Context)
		cs.add(s.NamespaceID, tableSteps, s.ID, "output", &s.Output)
		cs.add(s.NamespaceID, tableSteps, s.ID, "error", &s.Error)
	}
	return b.decode(ctx, cs)
}

// writeEscapes notes the escaped values a batch write (ApplyWrites) stores,
// as prepareWrite encodes them.
func writeEscapes(e *escapes, ns string, w backend.Write) {
	switch w.Kind {
	case backend.WriteInsertStep:
		if s := w.Step; s != nil {
			e.note(ns, tableSteps, s.ID, "config", s.Config)
			e.note(ns, tableSteps, s.ID, "context", s.Context)
			e.note(ns, tableSteps, s.ID, "output", s.Output)
			e.note(ns, tableSteps, s.ID, "error", s.Error)
		}
	case backend.WriteFinishStep:
		switch s := w.Step; {
		case s == nil:
		case s.Status.Normalize() == backend.StepCompleted:
			e.note(ns, tableSteps, s.ID, "output", s.Output)
		case s.Status.Normalize() == backend.StepFailed:
			e.note(ns, tableSteps, s.ID, "error", s.Error)
		}
	case backend.WriteCompleteRun:
		e.note(ns, tableRuns, w.WorkflowRunID, "output", w.Output)
	case backend.WriteRescheduleRun, backend.WriteFailRun:
		e.note(ns, tableRuns, w.WorkflowRunID, "error", w.Error)
	}
}

// batchEscapes notes the escaped values of the batch's writes.
func batchEscapes(ns string, items []batchItem) escapes {
	var e escapes
	for _, it := range items {
		writeEscapes(&e, ns, it.w)
	}
	return e
}
