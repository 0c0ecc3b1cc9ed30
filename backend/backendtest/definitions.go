package backendtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// definitionStore returns b's DefinitionStore, skipping the test when b
// does not implement the capability.
func definitionStore(t *testing.T, b backend.Backend) backend.DefinitionStore {
	t.Helper()
	ds, ok := b.(backend.DefinitionStore)
	if !ok {
		t.Skip("the backend does not implement backend.DefinitionStore")
	}
	return ds
}

func putDefinition(t *testing.T, ds backend.DefinitionStore, kind, name, body string) *backend.Definition {
	t.Helper()
	d, err := ds.PutDefinition(t.Context(), backend.PutDefinitionParams{Kind: kind, Name: name, Body: json.RawMessage(body)})
	if err != nil {
		t.Fatalf("PutDefinition(%s, %s): %v", kind, name, err)
	}
	return d
}

// sameJSON reports whether two JSON documents hold the same value (key
// order and spacing aside).
func sameJSON(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("decode %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

func testDefinitions(t *testing.T, s *suite) {
	t.Run("Put stores a definition that Get returns", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ds := definitionStore(t, b)
		before := time.Now()
		// Kept byte for byte: key order, spacing, U+0000, big numbers.
		body := `{"name":"order", "steps":[{"name":"a","handler":"h"}],"nul":"x\u0000y","n":12345678901234567890,"a":1}`
		put := putDefinition(t, ds, "dag", "order", body)
		if put.NamespaceID != b.NamespaceID() || put.Kind != "dag" || put.Name != "order" || !sameJSON(t, put.Body, json.RawMessage(body)) {
			t.Fatalf("PutDefinition returned %+v", put)
		}
		if d := put.CreatedAt.Sub(before); d < -clockSlack || d > clockSlack || !put.UpdatedAt.Equal(put.CreatedAt) {
			t.Fatalf("created at %v, updated at %v; want both now (%v)", put.CreatedAt, put.UpdatedAt, before)
		}
		got, err := ds.GetDefinition(t.Context(), "dag", "order")
		if err != nil {
			t.Fatalf("GetDefinition: %v", err)
		}
		if got.Kind != "dag" || got.Name != "order" || string(got.Body) != body ||
			!got.CreatedAt.Equal(put.CreatedAt) || !got.UpdatedAt.Equal(put.UpdatedAt) {
			t.Fatalf("GetDefinition = %+v (body %s), want %+v", got, got.Body, put)
		}
	})

	t.Run("Put again replaces the body and keeps created_at", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		ds := definitionStore(t, s.newBackendOn(t, clk))
		first := putDefinition(t, ds, "dag", "order", `{"v":1}`)
		requireTimeAt(t, "created_at", &first.CreatedAt, clk.Now())
		clk.Advance(time.Second)
		second := putDefinition(t, ds, "dag", "order", `{"v":2}`)
		requireTimeAt(t, "updated_at after the second Put", &second.UpdatedAt, clk.Now())
		if !second.CreatedAt.Equal(first.CreatedAt) {
			t.Fatalf("after the second Put: created %v updated %v; first was created %v updated %v",
				second.CreatedAt, second.UpdatedAt, first.CreatedAt, first.UpdatedAt)
		}
		got, err := ds.GetDefinition(t.Context(), "dag", "order")
		if err != nil || !sameJSON(t, got.Body, json.RawMessage(`{"v":2}`)) {
			t.Fatalf("GetDefinition = %+v, %v; want body {\"v\":2}", got, err)
		}
	})

	t.Run("Get of a missing definition is ErrDefinitionNotFound", func(t *testing.T) {
		t.Parallel()
		ds := definitionStore(t, s.newBackend(t))
		putDefinition(t, ds, "dag", "order", `{}`)
		_, err := ds.GetDefinition(t.Context(), "dag", "other")
		requireErrorIs(t, "GetDefinition of another name", err, backend.ErrDefinitionNotFound)
		_, err = ds.GetDefinition(t.Context(), "openflow", "order")
		requireErrorIs(t, "GetDefinition of another kind", err, backend.ErrDefinitionNotFound)
	})

	t.Run("Put refuses bad input and stores nothing", func(t *testing.T) {
		t.Parallel()
		ds := definitionStore(t, s.newBackend(t))
		long := strings.Repeat("x", backend.MaxDefinitionNameLength+1)
		for _, p := range []backend.PutDefinitionParams{
			{Kind: "", Name: "n", Body: json.RawMessage(`{}`)},
			{Kind: "dag", Name: "", Body: json.RawMessage(`{}`)},
			{Kind: long, Name: "n", Body: json.RawMessage(`{}`)},
			{Kind: "dag", Name: long, Body: json.RawMessage(`{}`)},
			{Kind: "dag", Name: "n", Body: nil},
			{Kind: "dag", Name: "n", Body: json.RawMessage(`{"unterminated":`)},
			{Kind: "dag", Name: "n", Body: json.RawMessage(`null`)},
			{Kind: "dag", Name: "n\x00", Body: json.RawMessage(`{}`)},
			{Kind: "dag", Name: "n", Body: json.RawMessage("\"\xff\"")},
		} {
			_, err := ds.PutDefinition(t.Context(), p)
			requireErrorIs(t, fmt.Sprintf("PutDefinition(%.20q, %.20q, %s)", p.Kind, p.Name, p.Body), err, backend.ErrInvalidArgument)
		}
		page, err := ds.ListDefinitions(t.Context(), backend.ListDefinitionsParams{})
		if err != nil || len(page.Data) != 0 {
			t.Fatalf("after refused Puts: ListDefinitions = %+v, %v; want nothing stored", page, err)
		}
	})

	t.Run("List orders by kind then name, filters by kind, and pages", func(t *testing.T) {
		t.Parallel()
		ds := definitionStore(t, s.newBackend(t))
		for _, kn := range [][2]string{{"dag", "c"}, {"openflow", "a"}, {"dag", "a"}, {"dag", "b"}, {"dag", "d"}} {
			putDefinition(t, ds, kn[0], kn[1], `{}`)
		}
		all := listAllDefinitions(t, ds, backend.ListDefinitionsParams{Limit: 2})
		if want := []string{"dag/a", "dag/b", "dag/c", "dag/d", "openflow/a"}; !reflect.DeepEqual(all, want) {
			t.Fatalf("pages of 2: %v, want %v", all, want)
		}
		dags := listAllDefinitions(t, ds, backend.ListDefinitionsParams{Kind: "dag", Limit: 3})
		if want := []string{"dag/a", "dag/b", "dag/c", "dag/d"}; !reflect.DeepEqual(dags, want) {
			t.Fatalf("kind dag, pages of 3: %v, want %v", dags, want)
		}
		page, err := ds.ListDefinitions(t.Context(), backend.ListDefinitionsParams{Kind: "none"})
		if err != nil || len(page.Data) != 0 || page.Next != nil {
			t.Fatalf("kind none: %+v, %v; want an empty last page", page, err)
		}
	})

	t.Run("List refuses a bad cursor or a negative limit", func(t *testing.T) {
		t.Parallel()
		ds := definitionStore(t, s.newBackend(t))
		_, err := ds.ListDefinitions(t.Context(), backend.ListDefinitionsParams{After: "not-a-cursor"})
		requireErrorIs(t, "ListDefinitions with a bad cursor", err, backend.ErrInvalidArgument)
		_, err = ds.ListDefinitions(t.Context(), backend.ListDefinitionsParams{Limit: -1})
		requireErrorIs(t, "ListDefinitions with limit -1", err, backend.ErrInvalidArgument)
	})

	t.Run("definitions are per namespace", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace()
		one, same, other := s.backendIn(t, ns), s.backendIn(t, ns), s.newBackend(t)
		putDefinition(t, definitionStore(t, one), "dag", "order", `{"v":1}`)
		if _, err := definitionStore(t, same).GetDefinition(t.Context(), "dag", "order"); err != nil {
			t.Fatalf("another backend of the namespace: GetDefinition: %v", err)
		}
		_, err := definitionStore(t, other).GetDefinition(t.Context(), "dag", "order")
		if !errors.Is(err, backend.ErrDefinitionNotFound) {
			t.Fatalf("a backend of another namespace: GetDefinition err = %v, want ErrDefinitionNotFound", err)
		}
	})
}

// listAllDefinitions follows the Next cursors and returns "kind/name" of
// every definition listed.
func listAllDefinitions(t *testing.T, ds backend.DefinitionStore, p backend.ListDefinitionsParams) []string {
	t.Helper()
	var out []string
	for range 100 {
		page, err := ds.ListDefinitions(t.Context(), p)
		if err != nil {
			t.Fatalf("ListDefinitions(%+v): %v", p, err)
		}
		if p.Limit > 0 && len(page.Data) > p.Limit {
			t.Fatalf("page of %d definitions, limit %d", len(page.Data), p.Limit)
		}
		for _, d := range page.Data {
			out = append(out, d.Kind+"/"+d.Name)
		}
		if page.Next == nil {
			return out
		}
		p.After = *page.Next
	}
	t.Fatal("ListDefinitions: more than 100 pages")
	return nil
}
