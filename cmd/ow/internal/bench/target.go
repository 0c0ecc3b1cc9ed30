package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
)

// namespace is the namespace every bench run lives in.
const namespace = "bench"

// target is one fresh database a measurement runs on: created for it,
// destroyed after it.
type target interface {
	// kind is Postgres or SQLite.
	kind() string
	// dsn is what a worker process opens: the database URL or file path.
	dsn() string
	// open opens a new backend on the database (migrated when the target
	// was made); the caller closes it.
	open(ctx context.Context) (backend.Backend, error)
	// counter opens the connection the bench polls run counts with.
	counter(ctx context.Context) (runCounter, error)
	// commits reads the database's committed transactions so far, once
	// every connection to it is closed (so every session's statistics are
	// in). ok is false where the backend has no such count (SQLite).
	commits(ctx context.Context) (n int64, ok bool, err error)
	// destroy drops the database; it is called with a live context even
	// after an interrupt.
	destroy(ctx context.Context) error
}

// runCounter counts the namespace's runs per status. calls says how many
// transactions it has committed on the target, so that they can be left
// out of the engine's commit count.
type runCounter interface {
	count(ctx context.Context) (backend.RunCounts, error)
	calls() int64
	close() error
}

// sqliteTarget is a fresh database file in its own temporary directory,
// in WAL mode with synchronous=FULL (the backend's defaults).
type sqliteTarget struct {
	dir, path string
}

func newSQLiteTarget(ctx context.Context, tempDir string) (*sqliteTarget, error) {
	dir, err := os.MkdirTemp(tempDir, "ow-bench-")
	if err != nil {
		return nil, fmt.Errorf("sqlite target: %w", err)
	}
	t := &sqliteTarget{dir: dir, path: filepath.Join(dir, "bench.db")}
	b, err := t.open(ctx) // creates and migrates the file
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := b.Close(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("sqlite target: close %s: %w", t.path, err)
	}
	return t, nil
}

func (t *sqliteTarget) kind() string { return SQLite }
func (t *sqliteTarget) dsn() string  { return t.path }

func (t *sqliteTarget) open(ctx context.Context) (backend.Backend, error) {
	return openBackend(ctx, SQLite, t.path)
}

func (t *sqliteTarget) counter(ctx context.Context) (runCounter, error) {
	b, err := t.open(ctx)
	if err != nil {
		return nil, err
	}
	return &backendCounter{b: b}, nil
}

func (t *sqliteTarget) commits(context.Context) (int64, bool, error) { return 0, false, nil }

func (t *sqliteTarget) destroy(context.Context) error { return os.RemoveAll(t.dir) }

// backendCounter counts runs through a backend of its own.
type backendCounter struct {
	b backend.Backend
	n int64
}

func (c *backendCounter) count(ctx context.Context) (backend.RunCounts, error) {
	c.n++
	return c.b.CountWorkflowRuns(ctx)
}

func (c *backendCounter) calls() int64 { return c.n }
func (c *backendCounter) close() error { return c.b.Close() }

// openBackend opens the bench namespace of a database: kind Postgres with
// dsn a URL (never migrating: the target did), or SQLite with dsn a file.
func openBackend(ctx context.Context, kind, dsn string) (backend.Backend, error) {
	return openBackendIn(ctx, kind, dsn, namespace)
}

// openBackendIn is openBackend for namespace ns.
func openBackendIn(ctx context.Context, kind, dsn, ns string) (backend.Backend, error) {
	switch kind {
	case SQLite:
		b, err := sqlite.Open(ctx, dsn, sqlite.Options{NamespaceID: ns})
		if err != nil {
			return nil, fmt.Errorf("open sqlite %s: %w", dsn, err)
		}
		return b, nil
	case Postgres:
		return openPostgres(ctx, dsn, ns, true)
	}
	return nil, fmt.Errorf("unknown backend %q", kind)
}
