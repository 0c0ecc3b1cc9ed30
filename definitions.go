package openworkflow

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/openworkflow-go/openworkflow/backend"
)

// definitionStore returns the client's backend as a DefinitionStore, or
// an error wrapping backend.ErrNotSupported.
func (c *Client) definitionStore(op string) (backend.DefinitionStore, error) {
	ds, ok := c.b.(backend.DefinitionStore)
	if !ok {
		return nil, fmt.Errorf("%s: %w: the backend (%T) stores no definitions (backend.DefinitionStore)", op, backend.ErrNotSupported, c.b)
	}
	return ds, nil
}

// PutDefinition stores the JSON document body as the definition of kind
// and name in the client's namespace, replacing an earlier body of the
// same kind and name (created_at is kept), and returns it as stored.
// Definitions are data read by interpreters (kind "dag": the dag
// package), workers and dashboards; the store does not validate the body
// beyond requiring JSON. Errors wrap backend.ErrInvalidArgument for an
// empty or too long kind or name or a body that is not JSON, and
// backend.ErrNotSupported when the backend is not a
// [backend.DefinitionStore] (both built-in backends are).
func (c *Client) PutDefinition(ctx context.Context, kind, name string, body json.RawMessage) (*backend.Definition, error) {
	ds, err := c.definitionStore("put definition")
	if err != nil {
		return nil, err
	}
	return ds.PutDefinition(ctx, backend.PutDefinitionParams{Kind: kind, Name: name, Body: body})
}

// GetDefinition returns the stored definition of kind and name, or an
// error wrapping backend.ErrDefinitionNotFound (or
// backend.ErrNotSupported, see [Client.PutDefinition]).
func (c *Client) GetDefinition(ctx context.Context, kind, name string) (*backend.Definition, error) {
	ds, err := c.definitionStore("get definition")
	if err != nil {
		return nil, err
	}
	return ds.GetDefinition(ctx, kind, name)
}

// ListDefinitions lists stored definitions by kind, then name, a page at
// a time (see [backend.ListDefinitionsParams]).
func (c *Client) ListDefinitions(ctx context.Context, p backend.ListDefinitionsParams) (*backend.Page[backend.Definition], error) {
	ds, err := c.definitionStore("list definitions")
	if err != nil {
		return nil, err
	}
	return ds.ListDefinitions(ctx, p)
}
