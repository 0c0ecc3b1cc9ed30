package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
)

func TestOpen(t *testing.T) {
	t.Parallel()
	requirePool(t)
	ctx := context.Background()

	t.Run("migrates a fresh schema and closes the pool it created", func(t *testing.T) {
		t.Parallel()
		schema := pgtest.NewSchema(t)
		b, err := postgres.Open(ctx, pgtest.URL(), postgres.Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		if b.NamespaceID() != backend.DefaultNamespaceID || b.Schema() != schema {
			t.Errorf("namespace %q schema %q", b.NamespaceID(), b.Schema())
		}
		if _, err := b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "wf"}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Subscribe(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if err := b.Pool().Ping(ctx); err == nil {
			t.Error("the pool Open created is still open after Close")
		}
	})

	t.Run("fails without tables when migrations are skipped", func(t *testing.T) {
		t.Parallel()
		b, err := postgres.Open(ctx, pgtest.URL(), postgres.Options{Schema: pgtest.NewSchema(t), SkipMigrations: true})
		if err != nil {
			t.Fatal(err) // the server is reachable: Open succeeds
		}
		defer b.Close()
		if _, err := b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "wf"}); err == nil {
			t.Error("create succeeded in a schema that was never migrated")
		}
	})

	t.Run("reports an unreachable server", func(t *testing.T) {
		t.Parallel()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := postgres.Open(cctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2", postgres.Options{}); err == nil {
			t.Error("Open succeeded against a closed port")
		}
	})
}

func TestFromPoolLeavesThePoolOpen(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	if _, err := b.Subscribe(t.Context()); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	if err := requirePool(t).Ping(context.Background()); err != nil {
		t.Errorf("shared pool closed by a FromPool backend: %v", err)
	}
}

func TestBadSchemaNamesAreRefused(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"1abc", "a-b", `a"b`, strings.Repeat("a", 64)} {
		if _, err := postgres.FromPool(requirePool(t), postgres.Options{Schema: s}); !errors.Is(err, backend.ErrInvalidArgument) {
			t.Errorf("schema %q: err = %v", s, err)
		}
	}
}

// TestOpenRefusesANamespaceNoRowCouldCarry: a namespace id is a run's
// field like its workflow name (issue 19): text of at most 255 bytes,
// checked before anything is created.
func TestOpenRefusesANamespaceNoRowCouldCarry(t *testing.T) {
	requirePool(t)
	for _, ns := range []string{strings.Repeat("n", backend.MaxNamespaceIDLength+1), "ns\xff", "ns\x00"} {
		_, err := postgres.Open(context.Background(), pgtest.URL(), postgres.Options{Schema: "never_created", NamespaceID: ns})
		var fe *backend.FieldError
		if !errors.As(err, &fe) || fe.Field != "namespace" || !errors.Is(err, backend.ErrInvalidArgument) {
			t.Errorf("Open with namespace %.40q: %v; want a FieldError on namespace", ns, err)
		}
	}
}
