package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

var _ backend.DefinitionStore = (*Backend)(nil)

// PutDefinition implements [backend.DefinitionStore] with one upsert.
func (b *Backend) PutDefinition(ctx context.Context, p backend.PutDefinitionParams) (*backend.Definition, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("put definition: %w", err)
	}
	var d *backend.Definition
	err := b.write(ctx, func(tx *txn, now time.Time, _ *events) error {
		var err error
		d, err = scanDefinition(tx.QueryRowContext(ctx, b.q.PutDefinition,
			sql.Named("ns", b.ns), sql.Named("kind", p.Kind), sql.Named("name", p.Name),
			sql.Named("body", string(p.Body)), sql.Named("now", timeArg(now))))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("put definition %s %q: %w", p.Kind, p.Name, err)
	}
	return d, nil
}

// GetDefinition implements [backend.DefinitionStore].
func (b *Backend) GetDefinition(ctx context.Context, kind, name string) (*backend.Definition, error) {
	var d *backend.Definition
	err := b.read(ctx, func() error {
		var err error
		d, err = scanDefinition(b.db.QueryRowContext(ctx, b.q.GetDefinition,
			sql.Named("ns", b.ns), sql.Named("kind", kind), sql.Named("name", name)))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		err = backend.ErrDefinitionNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get definition %s %q: %w", kind, name, err)
	}
	return d, nil
}

// ListDefinitions implements [backend.DefinitionStore]: one range of the
// primary key, one row more than the page to know whether another follows.
func (b *Backend) ListDefinitions(ctx context.Context, p backend.ListDefinitionsParams) (*backend.Page[backend.Definition], error) {
	if p.Limit < 0 {
		return nil, fmt.Errorf("list definitions: %w: negative limit %d", backend.ErrInvalidArgument, p.Limit)
	}
	limit := p.Limit
	if limit == 0 {
		limit = backend.DefaultPageSize
	}
	args := []any{sql.Named("ns", b.ns), sql.Named("kind", nil), sql.Named("after_kind", nil),
		sql.Named("after_name", nil), sql.Named("limit", limit+1)}
	if p.Kind != "" {
		args[1] = sql.Named("kind", p.Kind)
	}
	if p.After != "" {
		c, err := backend.DecodeDefinitionCursor(p.After)
		if err != nil {
			return nil, fmt.Errorf("list definitions: %w", err)
		}
		args[2], args[3] = sql.Named("after_kind", c.Kind), sql.Named("after_name", c.Name)
	}
	var ds []backend.Definition
	err := b.read(ctx, func() error {
		ds = ds[:0]
		rows, err := b.db.QueryContext(ctx, b.q.ListDefinitions, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			d, err := scanDefinition(rows)
			if err != nil {
				return err
			}
			ds = append(ds, *d)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list definitions: %w", err)
	}
	page := &backend.Page[backend.Definition]{Data: ds}
	if len(ds) > limit {
		page.Data = ds[:limit]
		last := ds[limit-1]
		next := backend.DefinitionCursor{Kind: last.Kind, Name: last.Name}.Encode()
		page.Next = &next
	}
	if page.Data == nil {
		page.Data = []backend.Definition{}
	}
	return page, nil
}

// scanDefinition reads one row of the definition_columns fragment
// (sql/definitions.sql).
func scanDefinition(row scanner) (*backend.Definition, error) {
	var d backend.Definition
	var body, created, updated string
	if err := row.Scan(&d.NamespaceID, &d.Kind, &d.Name, &body, &created, &updated); err != nil {
		return nil, err
	}
	d.Body = []byte(body)
	var err error
	if d.CreatedAt, err = backend.ParseTime(created); err != nil {
		return nil, fmt.Errorf("definition %s %q: created_at %q: %w", d.Kind, d.Name, created, err)
	}
	if d.UpdatedAt, err = backend.ParseTime(updated); err != nil {
		return nil, fmt.Errorf("definition %s %q: updated_at %q: %w", d.Kind, d.Name, updated, err)
	}
	return &d, nil
}
