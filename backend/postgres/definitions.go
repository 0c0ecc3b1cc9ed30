package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
)

var _ backend.DefinitionStore = (*Backend)(nil)

// PutDefinition implements [backend.DefinitionStore] with one upsert.
func (b *Backend) PutDefinition(ctx context.Context, p backend.PutDefinitionParams) (*backend.Definition, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("put definition: %w", err)
	}
	rows, err := b.pool.Query(ctx, b.q.PutDefinition, b.namespace, p.Kind, p.Name, string(p.Body), b.at())
	if err != nil {
		return nil, fmt.Errorf("put definition %s %q: %w", p.Kind, p.Name, err)
	}
	d, err := pgx.CollectExactlyOneRow(rows, scanDefinition)
	if err != nil {
		return nil, fmt.Errorf("put definition %s %q: %w", p.Kind, p.Name, err)
	}
	return d, nil
}

// GetDefinition implements [backend.DefinitionStore].
func (b *Backend) GetDefinition(ctx context.Context, kind, name string) (*backend.Definition, error) {
	rows, err := b.pool.Query(ctx, b.q.GetDefinition, b.namespace, kind, name)
	if err == nil {
		var d *backend.Definition
		d, err = pgx.CollectExactlyOneRow(rows, scanDefinition)
		if err == nil {
			return d, nil
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		err = backend.ErrDefinitionNotFound
	}
	return nil, fmt.Errorf("get definition %s %q: %w", kind, name, err)
}

// ListDefinitions implements [backend.DefinitionStore]: one index range of
// the primary key, one row more than the page to know whether another
// follows.
func (b *Backend) ListDefinitions(ctx context.Context, p backend.ListDefinitionsParams) (*backend.Page[backend.Definition], error) {
	if p.Limit < 0 {
		return nil, fmt.Errorf("list definitions: %w: negative limit %d", backend.ErrInvalidArgument, p.Limit)
	}
	limit := p.Limit
	if limit == 0 {
		limit = backend.DefaultPageSize
	}
	var kind, afterKind, afterName *string
	if p.Kind != "" {
		kind = &p.Kind
	}
	if p.After != "" {
		c, err := backend.DecodeDefinitionCursor(p.After)
		if err != nil {
			return nil, fmt.Errorf("list definitions: %w", err)
		}
		afterKind, afterName = &c.Kind, &c.Name
	}
	rows, err := b.pool.Query(ctx, b.q.ListDefinitions, b.namespace, kind, afterKind, afterName, limit+1)
	if err != nil {
		return nil, fmt.Errorf("list definitions: %w", err)
	}
	ds, err := pgx.CollectRows(rows, scanDefinition)
	if err != nil {
		return nil, fmt.Errorf("list definitions: %w", err)
	}
	return definitionPage(ds, limit), nil
}

// definitionPage makes the page of the first limit of ds (read with one
// extra row): Next is set when a row follows.
func definitionPage(ds []*backend.Definition, limit int) *backend.Page[backend.Definition] {
	page := &backend.Page[backend.Definition]{Data: make([]backend.Definition, 0, min(len(ds), limit))}
	for i, d := range ds {
		if i == limit {
			last := page.Data[limit-1]
			next := backend.DefinitionCursor{Kind: last.Kind, Name: last.Name}.Encode()
			page.Next = &next
			break
		}
		page.Data = append(page.Data, *d)
	}
	return page
}

// scanDefinition reads one row of the definition_columns fragment
// (sql/definitions.sql).
func scanDefinition(row pgx.CollectableRow) (*backend.Definition, error) {
	var d backend.Definition
	var body string
	if err := row.Scan(&d.NamespaceID, &d.Kind, &d.Name, &body, &d.CreatedAt, &d.UpdatedAt); err != nil {
		return nil, err
	}
	d.Body = json.RawMessage(body)
	d.CreatedAt, d.UpdatedAt = d.CreatedAt.UTC(), d.UpdatedAt.UTC()
	return &d, nil
}
