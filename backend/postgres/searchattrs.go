package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/runquery"
)

var _ backend.SearchAttributeStore = (*Backend)(nil)

// writeSearchAttributes stores attrs on run runID (created at createdAt)
// in tx: it declares the names not yet declared with their values'
// types, converts every value to its name's declared type, replaces the
// run's values of those names (a nil value only removes) and, for an
// upsert, checks the run's totals against the limits. Any refusal is an
// error wrapping backend.ErrInvalidSearchAttribute; the caller's
// transaction then rolls back.
func (b *Backend) writeSearchAttributes(ctx context.Context, tx pgx.Tx, runID string, createdAt time.Time, attrs backend.SearchAttributes, upsert bool) error {
	names := attrs.Names()
	var setNames, setTypes []string
	for _, name := range names {
		if attrs[name] == nil {
			continue
		}
		typ, _, err := backend.InferSearchAttribute(name, attrs[name])
		if err != nil {
			return err
		}
		setNames, setTypes = append(setNames, name), append(setTypes, string(typ))
	}
	if len(setNames) > 0 {
		if _, err := tx.Exec(ctx, b.q.DeclareSearchAttributes, b.namespace, setNames, setTypes, b.at()); err != nil {
			return err
		}
	}
	declared, err := b.declaredTypes(ctx, tx, setNames)
	if err != nil {
		return err
	}
	var (
		rowNames, keywords []*string
		seqs               []int32
		ints               []*int64
		floats             []*float64
		bools              []*bool
		times              []*time.Time
	)
	for _, name := range setNames {
		vals, err := backend.CoerceSearchAttribute(name, declared[name], attrs[name])
		if err != nil {
			return err
		}
		for i, v := range vals {
			n := name
			rowNames, seqs = append(rowNames, &n), append(seqs, int32(i))
			var k *string
			var in *int64
			var f *float64
			var bo *bool
			var tm *time.Time
			switch v.Type {
			case runquery.Keyword, runquery.KeywordList:
				k = &v.Keyword
			case runquery.Int:
				in = &v.Int
			case runquery.Float:
				f = &v.Float
			case runquery.Bool:
				bo = &v.Bool
			case runquery.Time:
				tm = &v.Time
			}
			keywords, ints, floats, bools, times = append(keywords, k), append(ints, in), append(floats, f), append(bools, bo), append(times, tm)
		}
	}
	if upsert {
		if _, err := tx.Exec(ctx, b.q.DeleteSearchAttributes, b.namespace, runID, names); err != nil {
			return err
		}
	}
	if len(rowNames) > 0 {
		if _, err := tx.Exec(ctx, b.q.InsertSearchAttributes, b.namespace, runID, createdAt,
			rowNames, seqs, keywords, ints, floats, bools, times); err != nil {
			return err
		}
	}
	if upsert {
		var count, size int64
		if err := tx.QueryRow(ctx, b.q.SearchAttributeTotals, b.namespace, runID).Scan(&count, &size); err != nil {
			return err
		}
		if err := checkTotals(runID, count, size); err != nil {
			return err
		}
	}
	return nil
}

// checkTotals refuses a run holding more attributes, or more bytes of
// them, than the limits allow.
func checkTotals(runID string, count, size int64) error {
	if count > backend.MaxSearchAttributes {
		return fmt.Errorf("%w: run %s would hold %d attributes, more than the %d allowed", backend.ErrInvalidSearchAttribute, runID, count, backend.MaxSearchAttributes)
	}
	if size > backend.MaxSearchAttributesBytes {
		return fmt.Errorf("%w: run %s's attributes would take %d bytes, more than the %d allowed", backend.ErrInvalidSearchAttribute, runID, size, backend.MaxSearchAttributesBytes)
	}
	return nil
}

// declaredTypes reads the declared types of names.
func (b *Backend) declaredTypes(ctx context.Context, q querier, names []string) (map[string]runquery.Type, error) {
	types := map[string]runquery.Type{}
	if len(names) == 0 {
		return types, nil
	}
	rows, err := q.Query(ctx, b.q.SearchAttributeTypes, b.namespace, names)
	if err != nil {
		return nil, err
	}
	var name, typ string
	_, err = pgx.ForEachRow(rows, []any{&name, &typ}, func() error {
		types[name] = runquery.Type(typ)
		return nil
	})
	return types, err
}

// UpsertSearchAttributes implements [backend.SearchAttributeStore]: in one
// transaction, it locks the run, then writes as writeSearchAttributes.
func (b *Backend) UpsertSearchAttributes(ctx context.Context, p backend.UpsertSearchAttributesParams) error {
	if err := p.Attributes.Validate(); err != nil {
		return fmt.Errorf("upsert search attributes of run %s: %w", p.WorkflowRunID, err)
	}
	if !backend.ValidText(p.WorkflowRunID) {
		return fmt.Errorf("upsert search attributes of run %q: %w", p.WorkflowRunID, backend.ErrRunNotFound)
	}
	if len(p.Attributes) == 0 {
		return nil
	}
	err := b.inTx(ctx, func(tx pgx.Tx) error {
		var createdAt time.Time
		if err := tx.QueryRow(ctx, b.q.LockRunForSearchAttributes, b.namespace, p.WorkflowRunID).Scan(&createdAt); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return backend.ErrRunNotFound
			}
			return err
		}
		return b.writeSearchAttributes(ctx, tx, p.WorkflowRunID, createdAt, p.Attributes, true)
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
	var valid []string
	for _, id := range runIDs {
		if backend.ValidText(id) {
			valid = append(valid, id)
		}
	}
	if len(valid) == 0 {
		return out, nil
	}
	rows, err := b.pool.Query(ctx, b.q.SearchAttributesOf, b.namespace, valid)
	if err != nil {
		return nil, fmt.Errorf("read search attributes: %w", err)
	}
	byRun := map[string]map[string][]backend.SearchAttributeValue{}
	var (
		runID, name, typ string
		k                *string
		in               *int64
		f                *float64
		bo               *bool
		tm               *time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&runID, &name, &typ, &k, &in, &f, &bo, &tm}, func() error {
		v := backend.SearchAttributeValue{Type: runquery.Type(typ)}
		switch {
		case k != nil:
			v.Keyword = *k
		case in != nil:
			v.Int = *in
		case f != nil:
			v.Float = *f
		case bo != nil:
			v.Bool = *bo
		case tm != nil:
			v.Time = tm.UTC()
		}
		if byRun[runID] == nil {
			byRun[runID] = map[string][]backend.SearchAttributeValue{}
		}
		byRun[runID][name] = append(byRun[runID][name], v)
		return nil
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
	rows, err := b.pool.Query(ctx, b.q.ListSearchAttributeTypes, b.namespace)
	if err != nil {
		return nil, fmt.Errorf("list search attribute types: %w", err)
	}
	types := map[string]runquery.Type{}
	var name, typ string
	_, err = pgx.ForEachRow(rows, []any{&name, &typ}, func() error {
		types[name] = runquery.Type(typ)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list search attribute types: %w", err)
	}
	return types, nil
}
