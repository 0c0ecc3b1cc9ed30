package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Defaults of the read replica's options.
const (
	// DefaultReplicaMaxLag is the replay lag past which marked reads go
	// to the primary: 10 s.
	DefaultReplicaMaxLag = 10 * time.Second
	// DefaultReplicaCheckInterval is how often the replica's lag is
	// measured: 1 s.
	DefaultReplicaCheckInterval = time.Second
	// replicaCheckTimeout bounds one measurement.
	replicaCheckTimeout = 3 * time.Second
)

var _ backend.ReadReplicas = (*Backend)(nil)

// replica is the read replica of a backend and the goroutine measuring its
// lag. The backend owns it: Close stops the goroutine and closes the pool.
type replica struct {
	pool     *pgxpool.Pool
	primary  *pgxpool.Pool
	maxLag   time.Duration
	interval time.Duration

	mu        sync.Mutex
	up        bool
	err       string
	replayLSN uint64
	lagSecs   float64
	lagBytes  int64
	checkedAt time.Time

	replicaReads, primaryReads atomic.Int64

	cancel context.CancelFunc
	done   chan struct{}
}

// openReplica connects to the replica at url, measures it once (a replica
// that is down does not fail Open: reads go to the primary until it is
// back) and starts the monitor.
func openReplica(ctx context.Context, url string, primary *pgxpool.Pool, opts Options) (*replica, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres backend: %w: read replica URL: %v", backend.ErrInvalidArgument, err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	if err := applyPoolMode(cfg, opts.PoolMode, url); err != nil {
		return nil, fmt.Errorf("postgres backend: read replica URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres backend: open read replica pool: %w", err)
	}
	r := &replica{pool: pool, primary: primary, maxLag: opts.ReplicaMaxLag, interval: opts.ReplicaCheckInterval, done: make(chan struct{})}
	r.check(ctx)
	mctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go r.monitor(mctx)
	return r, nil
}

func (r *replica) close() {
	r.cancel()
	<-r.done
	r.pool.Close()
}

func (r *replica) monitor(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.check(ctx)
		}
	}
}

// replicaStateQuery reads the replica's replayed WAL position and its lag
// in seconds: 0 when it replayed all it received (an idle primary sends
// nothing, and the age of the last replayed transaction would grow with
// no lag at all), else the age of the last replayed transaction. On a
// server not in recovery (a URL naming the primary itself) the position
// is its own current one.
const replicaStateQuery = `SELECT pg_is_in_recovery(),
  COALESCE(pg_last_wal_replay_lsn(), CASE WHEN pg_is_in_recovery() THEN '0/0'::pg_lsn ELSE pg_current_wal_lsn() END)::text,
  COALESCE(CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
    ELSE EXTRACT(EPOCH FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8 END, 0)`

// currentLSNQuery reads the primary's current WAL position.
const currentLSNQuery = `SELECT pg_current_wal_lsn()::text`

// check measures the replica once and records the outcome.
func (r *replica) check(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, replicaCheckTimeout)
	defer cancel()
	var inRecovery bool
	var replayText, primaryText string
	var lag float64
	err := r.pool.QueryRow(ctx, replicaStateQuery).Scan(&inRecovery, &replayText, &lag)
	if err == nil {
		err = r.primary.QueryRow(ctx, currentLSNQuery).Scan(&primaryText)
	}
	var replay, current uint64
	if err == nil {
		if replay, err = ParseLSN(replayText); err == nil {
			current, err = ParseLSN(primaryText)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checkedAt = time.Now()
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return // closing
		}
		r.up, r.err = false, err.Error()
		return
	}
	r.up, r.err, r.replayLSN, r.lagSecs = true, "", replay, lag
	r.lagBytes = 0
	if current > replay {
		r.lagBytes = int64(current - replay)
	}
}

// route says whether a read marked with readAfter may go to the replica:
// it is up, its lag is within the bound and it replayed readAfter.
func (r *replica) route(readAfter string) bool {
	var after uint64
	if readAfter != "" {
		var err error
		if after, err = ParseLSN(readAfter); err != nil {
			return false // not ours: the primary is always right
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.up && time.Duration(r.lagSecs*float64(time.Second)) <= r.maxLag && r.replayLSN >= after
}

func (r *replica) status() backend.ReplicaStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return backend.ReplicaStatus{
		Configured: true, Up: r.up, Error: r.err, LagSeconds: r.lagSecs, LagBytes: r.lagBytes,
		MaxLag: r.maxLag, CheckedAt: r.checkedAt,
		ReplicaReads: r.replicaReads.Load(), PrimaryReads: r.primaryReads.Load(),
	}
}

// ParseLSN parses a PostgreSQL WAL position as pg_lsn prints it ("16/B374D848":
// two hexadecimal halves of a 64-bit position).
func ParseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("%w: WAL position %q: want two hexadecimal numbers separated by '/'", backend.ErrInvalidArgument, s)
	}
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%w: WAL position %q: want two hexadecimal numbers separated by '/'", backend.ErrInvalidArgument, s)
	}
	return h<<32 | l, nil
}

// HasReadReplica implements [backend.ReadReplicas].
func (b *Backend) HasReadReplica() bool { return b.replica != nil }

// ReadAfter implements [backend.ReadReplicas]: the primary's current WAL
// position, which every transaction committed before the call is at or
// before. Without a replica it returns "" and asks nothing.
func (b *Backend) ReadAfter(ctx context.Context) (string, error) {
	if b.replica == nil {
		return "", nil
	}
	var lsn string
	if err := b.pool.QueryRow(ctx, currentLSNQuery).Scan(&lsn); err != nil {
		return "", fmt.Errorf("read the primary's WAL position: %w", err)
	}
	return lsn, nil
}

// ReplicaStatus implements [backend.ReadReplicas].
func (b *Backend) ReplicaStatus() backend.ReplicaStatus {
	if b.replica == nil {
		return backend.ReplicaStatus{}
	}
	return b.replica.status()
}

// readPool runs read on the pool a read with ctx goes to: the replica when
// ctx is marked by [backend.WithReplicaReads] and the replica may serve it
// (up, lag within Options.ReplicaMaxLag, the caller's writes replayed),
// else the primary. A read the replica fails (other than by the caller's
// own cancellation) is run again on the primary, so a replica going down
// between two checks costs a retry, not an error.
func (b *Backend) readPool(ctx context.Context, read func(*pgxpool.Pool) error) error {
	r := b.replica
	if r == nil {
		return read(b.pool)
	}
	after, ok := backend.ReplicaReadsAllowed(ctx)
	if !ok {
		return read(b.pool) // workers and the in-process client: always the primary
	}
	if r.route(after) {
		err := read(r.pool)
		if err == nil || ctx.Err() != nil || isNoRows(err) {
			r.replicaReads.Add(1)
			return err
		}
	}
	r.primaryReads.Add(1)
	return read(b.pool)
}

// isNoRows reports a read that found nothing: an answer, not a failure of
// the server that answered it.
func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
