package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/hub"
)

// Options configure a [Backend]. The zero value is usable: the default
// namespace in the default schema, migrated by [Open].
type Options struct {
	// NamespaceID is the namespace every call of the backend reads and
	// writes; empty means [backend.DefaultNamespaceID] ("default").
	NamespaceID string
	// Schema is the PostgreSQL schema holding the tables; empty means
	// [DefaultSchema] ("openworkflow"). It must match ^[a-zA-Z_]\w*$ and be
	// at most 63 bytes, else the constructors fail with
	// [backend.ErrInvalidArgument].
	Schema string
	// SkipMigrations makes [Open] not run [Migrate]; the tables must then
	// exist already. [FromPool] never migrates.
	SkipMigrations bool
	// Now, when set, is the clock of every time the backend writes or
	// compares with the present (claims, leases, deadlines, timestamps),
	// in place of the database's NOW(): tests move time by injecting
	// their own, as with sqlite.Options.Now. Nil (the default) means the
	// database's clock, which a deployment should keep.
	Now func() time.Time
	// MaxConns is the size of the pool [Open] creates; 0 means the URL's
	// pool_max_conns if it sets one, else [DefaultMaxConns]. A worker needs
	// connections for its concurrent group commits, claims, heartbeats and
	// reads at once.
	MaxConns int32
}

// DefaultMaxConns is the pool size [Open] uses by default (pgxpool's own
// default, 4 on a 2-core machine, serializes a busy worker's commits).
const DefaultMaxConns = 16

// withDefaults applies the defaults and validates; it is the one place
// where defaults are decided.
func (o Options) withDefaults() (Options, error) {
	if o.NamespaceID == "" {
		o.NamespaceID = backend.DefaultNamespaceID
	}
	if err := backend.ValidateNamespaceID(o.NamespaceID); err != nil {
		return o, fmt.Errorf("postgres options: %w", err)
	}
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if err := ValidateSchema(o.Schema); err != nil {
		return o, err
	}
	return o, nil
}

// lockReleaseTimeout bounds cleanup statements run after the caller's
// context is done (advisory unlock, listener close).
const lockReleaseTimeout = 5 * time.Second

// Backend is the PostgreSQL implementation of [backend.Backend], bound to
// one namespace of one schema. It is safe for concurrent use. Create it
// with [Open] or [FromPool] and release it with [Backend.Close].
type Backend struct {
	pool      *pgxpool.Pool
	ownsPool  bool
	namespace string
	schema    string
	q         queries
	clock     func() time.Time // Options.Now: nil for the database's clock
	now       func() time.Time // this process's clock (NextDueAt's answer): clock, or time.Now

	hub hub.Hub

	mu         sync.Mutex
	closed     bool
	listener   *listener // started by the first Subscribe
	dbIdentity string    // databaseIdentityQuery's answer on the pool, once asked (txstart.go)
}

var _ backend.Backend = (*Backend)(nil)

// Open connects to the database at url (a PostgreSQL URL or key=value DSN,
// as accepted by pgxpool.ParseConfig), runs [Migrate] unless
// opts.SkipMigrations is set, and returns a backend owning its pool:
// [Backend.Close] closes it. The connection is checked before Open returns,
// and a server older than [MinServerMajorVersion] is refused with an
// error wrapping [ErrUnsupportedServerVersion] (with or without
// migrations).
func Open(ctx context.Context, url string, opts Options) (*Backend, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres backend: parse URL: %w", err)
	}
	switch {
	case opts.MaxConns > 0:
		cfg.MaxConns = opts.MaxConns
	case !strings.Contains(url, "pool_max_conns"):
		cfg.MaxConns = DefaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres backend: open pool: %w", err)
	}
	if opts.SkipMigrations {
		err = checkPoolServerVersion(ctx, pool)
	} else {
		err = Migrate(ctx, pool, opts.Schema)
	}
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres backend: %w", err)
	}
	b, err := newBackend(pool, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	b.ownsPool = true
	return b, nil
}

// FromPool returns a backend using a pool the caller owns: it never
// migrates (call [Migrate] first, which also refuses a server older than
// [MinServerMajorVersion]; FromPool itself does not connect) and
// [Backend.Close] leaves the pool open.
// Several backends, for different namespaces, may share one pool.
func FromPool(pool *pgxpool.Pool, opts Options) (*Backend, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: nil pool", backend.ErrInvalidArgument)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return newBackend(pool, opts)
}

func newBackend(pool *pgxpool.Pool, opts Options) (*Backend, error) {
	q, err := loadQueries(opts.Schema)
	if err != nil {
		return nil, err
	}
	b := &Backend{pool: pool, namespace: opts.NamespaceID, schema: opts.Schema, q: q, clock: opts.Now, now: opts.Now}
	if b.now == nil {
		b.now = time.Now
	}
	return b, nil
}

// NamespaceID returns the namespace this backend reads and writes.
func (b *Backend) NamespaceID() string { return b.namespace }

// Schema returns the PostgreSQL schema of the tables.
func (b *Backend) Schema() string { return b.schema }

// Pool returns the connection pool the backend uses.
func (b *Backend) Pool() *pgxpool.Pool { return b.pool }

// Close stops the notification listener, waiting for its goroutine, and
// closes the pool if [Open] created it. Subscriptions receive no further
// events; their channels close when their contexts end. Close is
// idempotent and always returns nil.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	l := b.listener
	b.mu.Unlock()

	if l != nil {
		l.stop()
	}
	if b.ownsPool {
		b.pool.Close()
	}
	return nil
}

// inTx runs fn in a READ COMMITTED transaction on one pooled connection,
// committing if fn returns nil.
func (b *Backend) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, b.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, fn)
}

// fenceError explains why a write fenced on (status running, worker_id =
// workerID) matched no row: the run is missing (ErrRunNotFound, and
// ErrNotOwner) or not running under this worker (ErrNotOwner).
func (b *Backend) fenceError(ctx context.Context, op, runID, workerID string) error {
	status, owner, err := b.runOwnership(ctx, runID)
	return ownershipError(op, runID, workerID, status, owner, err)
}

// runOwnership reads a run's stored status and worker id.
func (b *Backend) runOwnership(ctx context.Context, runID string) (status string, owner *string, err error) {
	err = b.pool.QueryRow(ctx, b.q.RunOwnership, b.namespace, runID).Scan(&status, &owner)
	return status, owner, err
}

// ownershipError is fenceError's message for what runOwnership read.
func ownershipError(op, runID, workerID, status string, owner *string, err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		// A missing run is not this worker's either: a fenced write to it
		// is refused as to another's (backend.Worker promises both).
		return fmt.Errorf("%s: workflow run %s: %w: %w", op, runID, backend.ErrNotOwner, backend.ErrRunNotFound)
	}
	if err != nil {
		return fmt.Errorf("%s: workflow run %s: %w", op, runID, err)
	}
	ownerText := "none"
	if owner != nil {
		ownerText = *owner
	}
	return fmt.Errorf("%s: workflow run %s is %s with worker %s; refused for worker %s: %w",
		op, runID, backend.RunStatus(status).Normalize(), ownerText, workerID, backend.ErrNotOwner)
}

// stepFenceError explains why a fenced step write matched no row: the run
// fence (see fenceError), a missing attempt (ErrStepNotFound) or an attempt
// in the wrong status (ErrStepNotRunning).
func (b *Backend) stepFenceError(ctx context.Context, op, runID, stepID, workerID string) error {
	status, owner, err := b.runOwnership(ctx, runID)
	if err != nil || status != string(backend.RunRunning) || owner == nil || *owner != workerID {
		return ownershipError(op, runID, workerID, status, owner, err)
	}
	var stepStatus string
	err = b.pool.QueryRow(ctx, b.q.StepStatus, b.namespace, runID, stepID).Scan(&stepStatus)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s: step attempt %s of workflow run %s: %w", op, stepID, runID, backend.ErrStepNotFound)
	}
	if err != nil {
		return fmt.Errorf("%s: step attempt %s: %w", op, stepID, err)
	}
	return fmt.Errorf("%s: step attempt %s is %s: %w", op, stepID,
		backend.StepStatus(stepStatus).Normalize(), backend.ErrStepNotRunning)
}

// jsonArg converts a raw JSON value to a query argument: nil (or empty) is
// SQL NULL. Strings jsonb cannot hold are escaped (see encodeJSON); the
// write must record the escaped values it stores (escapes.json does both,
// and ApplyWrites records its writes' with batchEscapes), else they read
// back escaped.
func jsonArg(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	s, _ := encodeJSON(raw)
	return string(s)
}

// jsonOr is jsonArg with def standing in for nil.
func jsonOr(raw json.RawMessage, def string) any {
	if len(raw) == 0 {
		return def
	}
	s, _ := encodeJSON(raw)
	return string(s)
}

// checkJSON rejects, before it reaches the database, a value the store
// would refuse or change (see [backend.ValidateJSON]), naming what.
func checkJSON(what string, raw json.RawMessage) error {
	if err := backend.ValidateJSON(raw); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// ms truncates t to the millisecond precision of every stored timestamp.
func ms(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// msPtr is ms for optional times; nil stays nil.
func msPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := ms(*t)
	return &v
}

// durationMs converts a duration to whole milliseconds for interval maths.
func durationMs(d time.Duration) int64 { return d.Milliseconds() }
