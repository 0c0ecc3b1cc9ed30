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

	// ReadReplicaURL, when set, is a streaming replica of the database:
	// the list, count and get reads made with a context marked by
	// [backend.WithReplicaReads] (the HTTP API's and the dashboard's) go
	// to it while it is up, its replay lag is within ReplicaMaxLag and it
	// has replayed the caller's own last write; else to the primary.
	// Workers never read from it. A replica that is down does not fail
	// [Open]. Default "" (no replica). Only [Open] uses it.
	ReadReplicaURL string
	// ReplicaMaxLag is the replay lag past which marked reads go to the
	// primary; 0 means [DefaultReplicaMaxLag] (10 s).
	ReplicaMaxLag time.Duration
	// ReplicaCheckInterval is how often the replica's lag is measured;
	// 0 means [DefaultReplicaCheckInterval] (1 s).
	ReplicaCheckInterval time.Duration

	// PoolMode is how a pooler between the engine and PostgreSQL shares
	// server connections: "" or [PoolModeSession] (a direct connection or
	// a session-mode pooler: [Open] checks with
	// [DetectTransactionPooling] and refuses a transaction-mode pooler
	// with [ErrTransactionPooling]), or [PoolModeTransaction] (no session
	// state on pooled connections; DirectURL is then required). Any other
	// value fails with [backend.ErrInvalidArgument].
	PoolMode string
	// DirectURL is a URL reaching PostgreSQL without a transaction-mode
	// pooler (directly, or through a session-mode pool), for what needs a
	// session: the LISTEN connection and the migrations' advisory lock.
	// Required with PoolModeTransaction; default "" (the URL itself).
	DirectURL string
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
	if err := o.validatePoolMode(); err != nil {
		return o, fmt.Errorf("postgres options: %w", err)
	}
	if o.ReplicaMaxLag <= 0 {
		o.ReplicaMaxLag = DefaultReplicaMaxLag
	}
	if o.ReplicaCheckInterval <= 0 {
		o.ReplicaCheckInterval = DefaultReplicaCheckInterval
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

	replica   *replica // Options.ReadReplicaURL's, nil without one
	directURL string   // Options.DirectURL

	mu         sync.Mutex
	closed     bool
	listener   *listener // started by the first Subscribe
	dbIdentity string    // databaseIdentityQuery's answer on the pool, once asked (txstart.go)

	stats *firstAnalyze // the big tables' first ANALYZE (statistics.go)
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
	if err := applyPoolMode(cfg, opts.PoolMode, url); err != nil {
		return nil, fmt.Errorf("postgres backend: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres backend: open pool: %w", err)
	}
	b, err := newBackend(pool, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	b.ownsPool = true
	if err := b.open(ctx, opts); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// open checks the pooler, migrates unless told not to, and connects the
// read replica.
func (b *Backend) open(ctx context.Context, opts Options) error {
	if opts.PoolMode != PoolModeTransaction {
		shared, err := DetectTransactionPooling(ctx, b.pool)
		if err != nil {
			return fmt.Errorf("postgres backend: %w", err)
		}
		if shared {
			return fmt.Errorf("postgres backend: %w", transactionPoolingError())
		}
	}
	if _, err := b.listenConfig(); err != nil {
		return fmt.Errorf("postgres backend: %w", err)
	}
	var err error
	if opts.SkipMigrations {
		err = checkPoolServerVersion(ctx, b.pool)
	} else {
		_, err = b.Migrate(ctx)
	}
	if err != nil {
		return fmt.Errorf("postgres backend: %w", err)
	}
	if opts.ReadReplicaURL != "" {
		if b.replica, err = openReplica(ctx, opts.ReadReplicaURL, b.pool, opts); err != nil {
			return err
		}
	}
	return nil
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
	b := &Backend{pool: pool, namespace: opts.NamespaceID, schema: opts.Schema, q: q, clock: opts.Now, now: opts.Now, directURL: opts.DirectURL}
	b.stats = newFirstAnalyze(b)
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

// Close stops the notification listener and a first ANALYZE in flight
// (statistics.go), waiting for their goroutines, and
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
	b.stats.stop()
	if b.replica != nil {
		b.replica.close()
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
