package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
)

// otherDatabase creates a database with a unique name on the test server,
// migrated with schema, and returns a pool on it; both are dropped when
// t ends.
func otherDatabase(t *testing.T, schema string) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	admin := requirePool(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "owt_db_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	cfg, err := pgxpool.ParseConfig(pgtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Database = name
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
		if _, err := admin.Exec(context.Background(), "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	if err := postgres.Migrate(ctx, pool, schema); err != nil {
		t.Fatalf("migrate %s in database %s: %v", schema, name, err)
	}
	return pool
}

func TestStartTxRefusesATransactionOfAnotherDatabase(t *testing.T) {
	ctx := context.Background()
	b := pgtest.Open(t, postgres.Options{})
	other := otherDatabase(t, b.Schema())

	// A transaction on the other database, committed after the refusal:
	// nothing was written there.
	err := pgx.BeginFunc(ctx, other, func(tx pgx.Tx) error {
		_, err := b.CreateWorkflowRunTx(ctx, tx, backend.CreateWorkflowRunParams{WorkflowName: "wf"})
		if !errors.Is(err, postgres.ErrOtherDatabase) || !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), "Backend.Pool") {
			t.Errorf("create in another database's transaction: err = %v, want ErrOtherDatabase saying what to do", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := other.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{b.Schema(), "workflow_runs"}.Sanitize()).Scan(&n); err != nil || n != 0 {
		t.Fatalf("runs in the other database: %d, %v; want none", n, err)
	}

	// A transaction of another pool on the backend's own database is
	// accepted, on a new connection and on one already checked.
	same := pgtest.Pool(t)
	for i := range 2 {
		var id string
		err := pgx.BeginFunc(ctx, same, func(tx pgx.Tx) error {
			r, err := b.CreateWorkflowRunTx(ctx, tx, backend.CreateWorkflowRunParams{WorkflowName: "wf"})
			if err == nil {
				id = r.ID
			}
			return err
		})
		if err != nil {
			t.Fatalf("create %d in a transaction on the same database: %v", i, err)
		}
		if _, err := b.GetWorkflowRun(ctx, id); err != nil {
			t.Fatalf("run %d created in a transaction on the same database: %v", i, err)
		}
	}
}

// BenchmarkCreateWorkflowRunTx measures a start in the caller's
// transaction (begin, create, commit), the database check included: one
// query per new connection, then none.
func BenchmarkCreateWorkflowRunTx(b *testing.B) {
	ctx := context.Background()
	be := pgtest.Open(b, postgres.Options{})
	for b.Loop() {
		err := pgx.BeginFunc(ctx, be.Pool(), func(tx pgx.Tx) error {
			_, err := be.CreateWorkflowRunTx(ctx, tx, backend.CreateWorkflowRunParams{WorkflowName: "wf"})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
