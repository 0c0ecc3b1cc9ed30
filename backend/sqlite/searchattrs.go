package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/runquery"
)

var _ backend.SearchAttributeStore = (*Backend)(nil)

// writeSearchAttributes stores attrs on run runID (created at createdAt,
// as stored) in the write transaction tx, as the PostgreSQL backend does:
// it declares the names not yet declared with their values' types,
// converts every value to its name's declared type, replaces the run's
// values of those names (a nil value only removes) and, for an upsert,
// checks the run's totals against the limits. A refusal wraps
// backend.ErrInvalidSearchAttribute; the transaction then rolls back.
func (b *Backend) writeSearchAttributes(ctx context.Context, tx *txn, now time.Time, runID, createdAt string, attrs backend.SearchAttributes, upsert bool) error {
	names := attrs.Names()
	var setNames []string
	for _, name := range names {
		if attrs[name] == nil {
			continue
		}
		typ, _, err := backend.InferSearchAttribute(name, attrs[name])
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, b.q.DeclareSearchAttribute, sql.Named("ns", b.ns), sql.Named("name", name),
			sql.Named("type", string(typ)), sql.Named("now", timeArg(now))); err != nil {
			return err
		}
		setNames = append(setNames, name)
	}
	declared, err := b.declaredTypes(ctx, tx, setNames)
	if err != nil {
		return err
	}
	if upsert {
		js, _ := json.Marshal(names)
		if _, err := tx.ExecContext(ctx, b.q.DeleteSearchAttributes, sql.Named("ns", b.ns), sql.Named("id", runID), sql.Named("names", string(js))); err != nil {
			return err
		}
	}
	for _, name := range setNames {
		vals, err := backend.CoerceSearchAttribute(name, declared[name], attrs[name])
		if err != nil {
			return err
		}
		for i, v := range vals {
			var k, in, f, bo, tm any
			switch v.Type {
			case runquery.Keyword, runquery.KeywordList:
				k = v.Keyword
			case runquery.Int:
				in = v.Int
			case runquery.Float:
				f = v.Float
			case runquery.Bool:
				bo = 0
				if v.Bool {
					bo = 1
				}
			case runquery.Time:
				tm = timeArg(v.Time)
			}
			if _, err := tx.ExecContext(ctx, b.q.InsertSearchAttribute, sql.Named("ns", b.ns), sql.Named("id", runID),
				sql.Named("name", name), sql.Named("seq", i), sql.Named("run_created_at", createdAt),
				sql.Named("keyword", k), sql.Named("int", in), sql.Named("float", f), sql.Named("bool", bo), sql.Named("time", tm)); err != nil {
				return err
			}
		}
	}
	if upsert {
		var count, size int64
		if err := tx.QueryRowContext(ctx, b.q.SearchAttributeTotals, sql.Named("ns", b.ns), sql.Named("id", runID)).Scan(&count, &size); err != nil {
			return err
		}
		if count > backend.MaxSearchAttributes {
			return fmt.Errorf("%w: run %s would hold %d attributes, more than the %d allowed", backend.ErrInvalidSearchAttribute, runID, count, backend.MaxSearchAttributes)
		}
		if size > backend.MaxSearchAttributesBytes {
			return fmt.Errorf("%w: run %s's attributes would take %d bytes, more than the %d allowed", backend.ErrInvalidSearchAttribute, runID, size, backend.MaxSearchAttributesBytes)
		}
	}
	return nil
}

// declaredTypes reads the declared types of names in tx.
func (b *Backend) declaredTypes(ctx context.Context, tx *txn, names []string) (map[string]runquery.Type, error) {
	types := map[string]runquery.Type{}
	if len(names) == 0 {
		return types, nil
	}
	js, _ := json.Marshal(names)
	rows, err := tx.QueryContext(ctx, b.q.SearchAttributeTypes, sql.Named("ns", b.ns), sql.Named("names", string(js)))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return nil, err
		}
		types[name] = runquery.Type(typ)
	}
	return types, rows.Err()
}

// UpsertSearchAttributes implements [backend.SearchAttributeStore] in one
// write transaction.
func (b *Backend) UpsertSearchAttributes(ctx context.Context, p backend.UpsertSearchAttributesParams) error {
	if err := p.Attributes.Validate(); err != nil {
		return fmt.Errorf("upsert search attributes of run %s: %w", p.WorkflowRunID, err)
	}
	if len(p.Attributes) == 0 {
		return nil
	}
	err := b.write(ctx, func(tx *txn, now time.Time, _ *events) error {
		var createdAt string
		err := tx.QueryRowContext(ctx, b.q.RunCreatedAt, sql.Named("ns", b.ns), sql.Named("id", p.WorkflowRunID)).Scan(&createdAt)
		if errors.Is(err, sql.ErrNoRows) {
			return backend.ErrRunNotFound
		}
		if err != nil {
			return err
		}
		return b.writeSearchAttributes(ctx, tx, now, p.WorkflowRunID, createdAt, p.Attributes, true)
	})
	if err != nil {
		return fmt.Errorf("upsert search attributes of run %s: %w", p.WorkflowRunID, err)
	}
	return nil
}

// SearchAttributesOf implements [backend.SearchAttributeStore] with one
// query for all the runs.
func (b *Backend) SearchAttributesOf(ctx context.Context, runIDs []string) (map[string]backend.SearchAttributes, error) {
	out := map[string]backend.SearchAttributes{}
	if len(runIDs) == 0 {
		return out, nil
	}
	js, _ := json.Marshal(runIDs)
	byRun := map[string]map[string][]backend.SearchAttributeValue{}
	err := b.read(ctx, func() error {
		clear(byRun)
		rows, err := b.db.QueryContext(ctx, b.q.SearchAttributesOf, sql.Named("ns", b.ns), sql.Named("ids", string(js)))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var runID, name, typ string
			var k, tm sql.NullString
			var in sql.NullInt64
			var f sql.NullFloat64
			var bo sql.NullBool
			if err := rows.Scan(&runID, &name, &typ, &k, &in, &f, &bo, &tm); err != nil {
				return err
			}
			v := backend.SearchAttributeValue{Type: runquery.Type(typ), Keyword: k.String, Int: in.Int64, Float: f.Float64, Bool: bo.Bool}
			if tm.Valid {
				if v.Time, err = backend.ParseTime(tm.String); err != nil {
					return err
				}
			}
			if byRun[runID] == nil {
				byRun[runID] = map[string][]backend.SearchAttributeValue{}
			}
			byRun[runID][name] = append(byRun[runID][name], v)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("read search attributes: %w", err)
	}
	for id, vals := range byRun {
		out[id] = backend.SearchAttributesOf(vals)
	}
	return out, nil
}

// SearchAttributeTypes implements [backend.SearchAttributeStore].
func (b *Backend) SearchAttributeTypes(ctx context.Context) (map[string]runquery.Type, error) {
	types := map[string]runquery.Type{}
	err := b.read(ctx, func() error {
		clear(types)
		rows, err := b.db.QueryContext(ctx, b.q.ListSearchAttributeTypes, sql.Named("ns", b.ns))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name, typ string
			if err := rows.Scan(&name, &typ); err != nil {
				return err
			}
			types[name] = runquery.Type(typ)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list search attribute types: %w", err)
	}
	return types, nil
}
