package postgres_test

// Poolers: PgBouncer 1.18 started by the test (internal/pgcluster) in
// front of the test server, with a session-mode and a transaction-mode
// pool (production-postgres.md §5).

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/backendtest"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/internal/pgcluster"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
)

func TestPoolers(t *testing.T) {
	requirePool(t)
	bouncer := pgcluster.StartBouncerFor(t, pgtest.URL())
	ctx := t.Context()
	open := func(url string, opts postgres.Options) (*postgres.Backend, error) {
		opts.Schema = testSchema
		ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		b, err := postgres.Open(ctx, url, opts)
		if err == nil {
			t.Cleanup(func() { _ = b.Close() })
		}
		return b, err
	}
	pool := func(url string) *pgxpool.Pool {
		p, err := pgxpool.New(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}

	t.Run("detection tells transaction pooling from a session", func(t *testing.T) {
		for _, c := range []struct {
			name, url string
			want      bool
		}{{"direct", pgtest.URL(), false}, {"session mode", bouncer.SessionURL, false}, {"transaction mode", bouncer.TransactionURL, true}} {
			for i := range 5 { // PgBouncer hands out the most recently released server connection first: no luck involved
				got, err := postgres.DetectTransactionPooling(ctx, pool(c.url))
				if err != nil || got != c.want {
					t.Fatalf("%s, try %d: DetectTransactionPooling = %v, %v; want %v", c.name, i, got, err, c.want)
				}
			}
		}
	})

	t.Run("transaction mode not declared: Open refuses, saying what to set", func(t *testing.T) {
		_, err := open(bouncer.TransactionURL, postgres.Options{SkipMigrations: true})
		if !errors.Is(err, postgres.ErrTransactionPooling) {
			t.Fatalf("Open through a transaction-mode pool: %v, want ErrTransactionPooling", err)
		}
		for _, want := range []string{"postgres_pool_mode", "postgres_direct_url", "session"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not name %q: %v", want, err)
			}
		}
	})

	t.Run("transaction mode without a direct URL or with a statement cache is refused", func(t *testing.T) {
		if _, err := open(bouncer.TransactionURL, postgres.Options{PoolMode: postgres.PoolModeTransaction}); !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), "direct URL") {
			t.Errorf("no direct URL: %v", err)
		}
		if _, err := open(bouncer.TransactionURL+"&default_query_exec_mode=cache_statement", postgres.Options{PoolMode: postgres.PoolModeTransaction, DirectURL: pgtest.URL()}); !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), "cache_statement") {
			t.Errorf("cache_statement: %v", err)
		}
		if _, err := open(pgtest.URL(), postgres.Options{PoolMode: "statement"}); !errors.Is(err, backend.ErrInvalidArgument) {
			t.Errorf("pool mode statement: %v", err)
		}
	})

	t.Run("session mode works with the defaults", func(t *testing.T) {
		b, err := open(bouncer.SessionURL, postgres.Options{NamespaceID: newNamespace()})
		if err != nil {
			t.Fatal(err)
		}
		checkLISTEN(t, b)
	})

	t.Run("transaction mode declared: LISTEN through the direct URL", func(t *testing.T) {
		b, err := open(bouncer.TransactionURL, postgres.Options{NamespaceID: newNamespace(), PoolMode: postgres.PoolModeTransaction, DirectURL: pgtest.URL()})
		if err != nil {
			t.Fatal(err)
		}
		checkLISTEN(t, b)
		if _, err := b.Migrate(ctx); err != nil {
			t.Fatalf("migrate through the direct URL: %v", err)
		}
	})

	// The whole backend suite through the transaction-mode pool (4 server
	// connections for every backend the suite opens): no named prepared
	// statement, no session state.
	t.Run("conformance in transaction mode", func(t *testing.T) {
		backendtest.Run(t, backendtest.Harness{
			NewBackend: func(t testing.TB, namespaceID string, now func() time.Time) backend.Backend {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				b, err := postgres.Open(ctx, bouncer.TransactionURL, postgres.Options{Schema: testSchema, NamespaceID: namespaceID, Now: now,
					SkipMigrations: true, MaxConns: 4, PoolMode: postgres.PoolModeTransaction, DirectURL: pgtest.URL()})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = b.Close() })
				return b
			},
			AgeRun:                    ageRun,
			StoreStatus:               storeStatus,
			StoreScheduleWorkflowName: storeScheduleWorkflowName,
			InTx: func(t testing.TB, b backend.Backend, fn func(ctx context.Context, tx any) error) error {
				ctx := context.Background()
				return pgx.BeginFunc(ctx, b.(*postgres.Backend).Pool(), func(tx pgx.Tx) error { return fn(ctx, tx) })
			},
		})
	})
}

// checkLISTEN subscribes and expects the event of a run created through
// the backend's pool.
func checkLISTEN(t *testing.T, b *postgres.Backend) {
	t.Helper()
	events, err := b.Subscribe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	run := createRun(t, b, backend.CreateWorkflowRunParams{})
	expectEvent(t, events, backend.Event{Kind: backend.EventWorkAvailable, WorkflowRunID: run.ID})
}
