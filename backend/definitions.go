package backend

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrDefinitionNotFound: no stored definition has that kind and name in
// this namespace (returned wrapped by [DefinitionStore.GetDefinition]).
var ErrDefinitionNotFound = errors.New("definition not found")

// MaxDefinitionNameLength is the longest kind or name, in bytes, a
// [DefinitionStore] accepts.
const MaxDefinitionNameLength = 255

// DefinitionStore is an optional capability of a [Backend]: it stores
// named definitions that are data rather than code — DAG workflows
// (kind "dag"), OpenFlow flows — so that every worker, client and the
// dashboard of a namespace see the same ones. Discover it with a type
// assertion (b.(backend.DefinitionStore)); both built-in backends
// implement it, in a table of this SDK's own migration line
// (workflow_definitions), never in OpenWorkflow's tables.
//
// The store only keeps documents: it does not interpret or validate the
// body beyond requiring a JSON value, which is the caller's job (the dag
// package validates a DAG before it stores it).
type DefinitionStore interface {
	// PutDefinition creates the definition (kind, name) or replaces its
	// body, keeping created_at and setting updated_at to now, and returns
	// it as stored. The body is kept byte for byte. An empty or too long kind or name, or a body that is
	// not JSON (or is null), fails with [ErrInvalidArgument].
	PutDefinition(ctx context.Context, p PutDefinitionParams) (*Definition, error)
	// GetDefinition returns the definition (kind, name), or an error
	// wrapping [ErrDefinitionNotFound].
	GetDefinition(ctx context.Context, kind, name string) (*Definition, error)
	// ListDefinitions lists definitions ordered by kind, then name
	// (ascending, byte order), optionally of one kind, a page at a time.
	ListDefinitions(ctx context.Context, p ListDefinitionsParams) (*Page[Definition], error)
}

// Definition is one stored definition: a JSON document named by its kind
// and name within a namespace.
type Definition struct {
	// NamespaceID is the namespace the definition belongs to.
	NamespaceID string `json:"namespaceId"`
	// Kind says what the body is and who reads it, e.g. "dag".
	Kind string `json:"kind"`
	// Name identifies the definition within its kind, e.g. the workflow
	// name.
	Name string `json:"name"`
	// Body is the JSON document, kept as given byte for byte by both
	// built-in backends (a text column, not jsonb).
	Body json.RawMessage `json:"body"`
	// CreatedAt is the first Put's time; UpdatedAt the latest's (UTC,
	// milliseconds).
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// PutDefinitionParams are the inputs of [DefinitionStore.PutDefinition].
type PutDefinitionParams struct {
	// Kind and Name identify the definition; both required, at most
	// [MaxDefinitionNameLength] bytes.
	Kind string
	Name string
	// Body is the JSON document; required, not null.
	Body json.RawMessage
}

// ListDefinitionsParams filter and paginate [DefinitionStore.ListDefinitions].
type ListDefinitionsParams struct {
	// Kind, when set, lists only definitions of that kind.
	Kind string
	// Limit is the page size; 0 means [DefaultPageSize]. Negative fails
	// with [ErrInvalidArgument].
	Limit int
	// After is the Next cursor of a previous page; "" starts at the
	// beginning. A malformed cursor fails with [ErrInvalidArgument].
	After string
}

// Validate checks p as every DefinitionStore does before writing: a kind
// and a name that are valid text ([ValidText]) of at most
// [MaxDefinitionNameLength] bytes, and a body that is a JSON value every
// backend stores ([ValidateJSON]), not null. The error wraps
// [ErrInvalidArgument] and names what is wrong.
func (p PutDefinitionParams) Validate() error {
	for _, f := range []struct{ what, v string }{{"kind", p.Kind}, {"name", p.Name}} {
		if f.v == "" {
			return fmt.Errorf("%w: empty definition %s", ErrInvalidArgument, f.what)
		}
		if len(f.v) > MaxDefinitionNameLength {
			return fmt.Errorf("%w: definition %s %.40q… is longer than %d bytes", ErrInvalidArgument, f.what, f.v, MaxDefinitionNameLength)
		}
		if err := checkText("definition "+f.what, f.v); err != nil {
			return err
		}
	}
	if len(p.Body) == 0 || string(p.Body) == "null" {
		return fmt.Errorf("%w: body of definition %s %q is not a JSON value", ErrInvalidArgument, p.Kind, p.Name)
	}
	return checkJSONField(fmt.Sprintf("body of definition %s %q", p.Kind, p.Name), p.Body)
}

// DefinitionCursor is the position of a definition in a list: base64 of
// JSON {"kind","name"}.
type DefinitionCursor struct {
	// Kind and Name are the definition's; the pair orders definitions.
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// Encode returns the opaque cursor string.
func (c DefinitionCursor) Encode() string {
	b, _ := json.Marshal(c)
	return base64.StdEncoding.EncodeToString(b)
}

// DecodeDefinitionCursor parses a cursor made by [DefinitionCursor.Encode];
// it returns an error wrapping [ErrInvalidArgument] when s is not one.
func DecodeDefinitionCursor(s string) (DefinitionCursor, error) {
	var c DefinitionCursor
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil || c.Kind == "" || c.Name == "" {
		return DefinitionCursor{}, fmt.Errorf("%w: cursor %q is not a definition list cursor", ErrInvalidArgument, s)
	}
	return c, nil
}
