package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/hub"
)

// Options configure [Open]. The zero value is ready to use.
type Options struct {
	// NamespaceID is the namespace every query is bound to; "" means
	// [backend.DefaultNamespaceID] ("default").
	NamespaceID string
	// Now is the clock behind every timestamp the backend writes and every
	// available_at / deadline_at / idempotency-window comparison it makes.
	// nil means time.Now. Tests move time by injecting their own.
	Now func() time.Time
	// BusyTimeout is how long a statement waits for another connection or
	// process holding the write lock before SQLite reports SQLITE_BUSY
	// (which the backend then retries, see [Backend]); 0 means 5 s.
	BusyTimeout time.Duration
	// Synchronous is SQLite's synchronous setting: "FULL" (the default;
	// every commit is fsynced, so an acknowledged write survives power
	// loss) or "NORMAL" (in WAL mode, commits survive a crash of the
	// process but the last ones may roll back on power loss or an OS
	// crash; about twice as fast). Other values are an error.
	Synchronous string
	// MustExist makes [Open] refuse a file that does not exist, with an
	// error wrapping [ErrNoDatabase] (and os.ErrNotExist), rather than
	// create it: for programs that only read, so that a mistyped path
	// is reported instead of answered from a new, empty database. false
	// (the default) creates the file and its directory.
	MustExist bool
	// CheckIntegrity makes [Open] run SQLite's integrity check (PRAGMA
	// quick_check, as [CheckFile] and 'ow doctor' do) on an existing
	// file before using it, and refuse a damaged one with a
	// [*DamagedError] listing what the check found. The check reads
	// every page: 0.35 to 0.9 s for a 127 MB file on a 2-core machine
	// (warm to cold cache; see docs/security.md), so it is off by
	// default; a long-running worker can afford it at start. Without
	// it, damage is found when an operation reads a damaged page, and
	// the backend stops then.
	CheckIntegrity bool
}

// ErrNoDatabase is wrapped by the error of [Open] with
// [Options.MustExist] for a file that does not exist.
var ErrNoDatabase = errors.New("no such SQLite database file")

// maxOpenProblems is how many problems [Options.CheckIntegrity] keeps.
const maxOpenProblems = 10

// defaultBusyTimeout is Options.BusyTimeout's default.
const defaultBusyTimeout = 5 * time.Second

// defaultLeaseDuration is used by ClaimWorkflowRuns when
// LeaseDuration <= 0 (OpenWorkflow's worker default).
const defaultLeaseDuration = 30 * time.Second

// memoryPath is the special path of a private in-memory database.
const memoryPath = ":memory:"

// withDefaults returns o with every zero field replaced by its default.
func (o Options) withDefaults() Options {
	if o.NamespaceID == "" {
		o.NamespaceID = backend.DefaultNamespaceID
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = defaultBusyTimeout
	}
	if o.Synchronous == "" {
		o.Synchronous = "FULL"
	}
	return o
}

// Backend is the SQLite implementation of [backend.Backend], bound to one
// namespace of one database file. It is safe for concurrent use, and
// several Backends (in one process or in several processes) may share a
// file.
//
// Writes run in BEGIN IMMEDIATE transactions, so each takes SQLite's single
// write lock before reading what it will change. Within one process the
// Backends of a file also queue on an in-process lock, which hands the
// write lock over faster than SQLite's sleeping busy handler. Across
// processes they wait up to Options.BusyTimeout per attempt; an attempt
// that still fails with SQLITE_BUSY is retried with backoff (for up to ten
// busy timeouts, or until the context ends) rather than reported.
type Backend struct {
	path        string // absolute, or ":memory:"
	db          *sql.DB
	ns          string
	clock       func() time.Time
	busyTimeout time.Duration
	file        *sharedFile
	synchronous string   // Options.Synchronous: what a relaxed write's connection is set back to
	q           *queries // the embedded SQL, loaded once per process
	stmts       prepared // hot statements, prepared by Open
	closeOnce   sync.Once
	closeErr    error
}

var _ backend.Backend = (*Backend)(nil)

// Open opens (creating it if missing, with its parent directory) the
// SQLite database at path, in WAL mode with foreign keys on, applies the
// pending migrations under BEGIN IMMEDIATE (so processes opening a fresh
// file at once are safe) and returns a backend bound to
// opts.NamespaceID. path ":memory:" opens a private in-memory database
// (one connection; for tests). Close releases it. A file that is not
// empty and does not start with SQLite's header (cut short, or another
// kind of file) is refused with an error wrapping [ErrDamaged], rather
// than started over as an empty database as SQLite would; [IsDamaged]
// recognises that error and SQLite's own reports of a damaged file.
func Open(ctx context.Context, path string, opts Options) (*Backend, error) {
	return open(ctx, path, opts, true)
}

// open is Open; share=false gives the backend its own in-process lock and
// hub even for a file another Backend of this process has open, as if it
// lived in another process (tests use it).
func open(ctx context.Context, path string, opts Options, share bool) (*Backend, error) {
	if path == "" {
		return nil, fmt.Errorf("open sqlite backend: %w: empty path", backend.ErrInvalidArgument)
	}
	q, err := loadedQueries()
	if err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	if err := backend.ValidateNamespaceID(opts.NamespaceID); err != nil {
		return nil, fmt.Errorf("open sqlite backend: %w", err)
	}
	switch opts.Synchronous {
	case "FULL", "NORMAL":
	default:
		return nil, fmt.Errorf("open sqlite backend %s: %w: Synchronous %q (want FULL or NORMAL)", path, backend.ErrInvalidArgument, opts.Synchronous)
	}
	memory := path == memoryPath
	key := ""
	if !memory {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("open sqlite backend %s: %w", path, err)
		}
		if opts.MustExist {
			if _, err := os.Stat(abs); errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("open sqlite backend: %w %s (%w): check the path; a program that writes (opening without Options.MustExist) creates the file", ErrNoDatabase, abs, os.ErrNotExist)
			}
		}
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return nil, fmt.Errorf("open sqlite backend %s: %w", path, err)
		}
		path = abs
		if err := checkHeader(path); err != nil {
			return nil, fmt.Errorf("open sqlite backend: %w", err)
		}
		if share {
			key = abs
		}
	}

	db, err := sql.Open("sqlite", dsn(path, memory, opts.MustExist, opts.BusyTimeout, opts.Synchronous))
	if err != nil {
		return nil, fmt.Errorf("open sqlite backend %s: %w", path, err)
	}
	if memory {
		// Each connection to ":memory:" is a different database.
		db.SetMaxOpenConns(1)
	} else {
		db.SetMaxIdleConns(4)
	}

	b := &Backend{
		path:        path,
		db:          db,
		synchronous: opts.Synchronous,
		ns:          opts.NamespaceID,
		clock:       opts.Now,
		busyTimeout: opts.BusyTimeout,
		file:        acquireFile(key),
		q:           q,
	}
	if err := b.file.failed(); err != nil {
		// Another Backend of this process found the file damaged.
		_ = b.Close()
		return nil, err
	}
	if opts.CheckIntegrity && !memory {
		problems, err := quickCheck(ctx, db, maxOpenProblems)
		if err == nil && len(problems) > 0 {
			err = &DamagedError{Path: path, Problems: problems}
		}
		if err != nil {
			_ = b.Close()
			return nil, fmt.Errorf("open sqlite backend %s: %w", path, err)
		}
	}
	if err := b.migrate(ctx); err != nil {
		_ = b.Close()
		if IsDamaged(err) {
			var de *DamagedError
			if !errors.As(err, &de) {
				err = &DamagedError{Path: path, Err: err}
			}
			return nil, fmt.Errorf("open sqlite backend: %w", err)
		}
		return nil, fmt.Errorf("open sqlite backend %s: %w", path, err)
	}
	if b.stmts, err = prepare(ctx, db, q); err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("open sqlite backend %s: %w", path, err)
	}
	return b, nil
}

// dsn builds modernc's data source name: busy timeout first, WAL for
// files, foreign keys on, and BEGIN IMMEDIATE for every transaction;
// mustExist opens the file as a URI in mode rw, which never creates it.
func dsn(path string, memory, mustExist bool, busy time.Duration, synchronous string) string {
	q := url.Values{}
	if mustExist && !memory {
		q.Set("mode", "rw")
		path = "file:" + (&url.URL{Path: path}).EscapedPath()
	}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busy.Milliseconds(), 10)+")")
	if !memory {
		q.Add("_pragma", "journal_mode(WAL)")
	}
	q.Add("_pragma", "synchronous("+synchronous+")")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	return path + "?" + q.Encode()
}

// NamespaceID returns the namespace this backend is bound to.
func (b *Backend) NamespaceID() string { return b.ns }

// Subscribe returns, until ctx is done, the wake-up events concerning this
// backend's namespace made by every Backend of this process open on the
// same file (a parent woken by a child in another namespace included). It
// never fails.
func (b *Backend) Subscribe(ctx context.Context) (<-chan backend.Event, error) {
	return b.file.hub(b.ns).Subscribe(ctx), nil
}

// Close closes the database. Later calls return the first call's result.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		b.stmts.close()
		b.closeErr = b.db.Close()
		releaseFile(b.file)
	})
	return b.closeErr
}

// now is the injected clock, in UTC, truncated to the milliseconds stored.
func (b *Backend) now() time.Time {
	return b.clock().UTC().Truncate(time.Millisecond)
}

// sharedFile is what the Backends of one process share for one file: the
// in-process write lock and one event hub per namespace.
type sharedFile struct {
	key  string
	refs int // guarded by filesMu
	// writeLock is a one-slot semaphore (a channel so waiting honours
	// contexts).
	writeLock chan struct{}

	hubsMu sync.Mutex
	hubs   map[string]*hub.Hub

	// userTxs are the InTx transactions in flight (txstart.go).
	userTxs userTxs

	// damaged is set, once, when an operation found the file damaged;
	// every later operation fails with it (see DamagedError).
	damaged atomic.Pointer[DamagedError]
}

// failed returns the file's *DamagedError once an operation found the
// file damaged; else nil.
func (f *sharedFile) failed() error {
	if de := f.damaged.Load(); de != nil {
		return de
	}
	return nil
}

// latch records that err, SQLite's report of damage in the file at path,
// was met, unless an earlier one was, and returns the error every
// operation on the file fails with from now on.
func (f *sharedFile) latch(path string, err error) error {
	var de *DamagedError
	if !errors.As(err, &de) {
		de = &DamagedError{Path: path, Err: err}
	}
	f.damaged.CompareAndSwap(nil, de)
	return f.damaged.Load()
}

// hub returns the event hub of namespace ns, creating it on first use.
func (f *sharedFile) hub(ns string) *hub.Hub {
	f.hubsMu.Lock()
	defer f.hubsMu.Unlock()
	h, ok := f.hubs[ns]
	if !ok {
		if f.hubs == nil {
			f.hubs = map[string]*hub.Hub{}
		}
		h = &hub.Hub{}
		f.hubs[ns] = h
	}
	return h
}

var (
	filesMu sync.Mutex
	files   = map[string]*sharedFile{}
)

// acquireFile returns the shared state of the file key (its absolute
// path), creating it on first use; key "" gets a private one.
func acquireFile(key string) *sharedFile {
	if key == "" {
		return &sharedFile{writeLock: make(chan struct{}, 1)}
	}
	filesMu.Lock()
	defer filesMu.Unlock()
	f, ok := files[key]
	if !ok {
		f = &sharedFile{key: key, writeLock: make(chan struct{}, 1)}
		files[key] = f
	}
	f.refs++
	return f
}

// releaseFile drops one reference taken by acquireFile.
func releaseFile(f *sharedFile) {
	if f.key == "" {
		return
	}
	filesMu.Lock()
	defer filesMu.Unlock()
	f.refs--
	if f.refs == 0 {
		delete(files, f.key)
	}
}

// events collects the wake-ups of one write, each for the hub of its
// namespace, published after the commit.
type events []nsEvent

// nsEvent is an event and the namespace it concerns.
type nsEvent struct {
	ns string
	backend.Event
}

// workAvailable records that a run of namespace ns became claimable now
// (once per write and namespace).
func (e *events) workAvailable(ns string) {
	want := nsEvent{ns, backend.Event{Kind: backend.EventWorkAvailable}}
	for _, ev := range *e {
		if ev == want {
			return
		}
	}
	*e = append(*e, want)
}

// chunk records that stream of run runID of namespace ns got chunk seq.
func (e *events) chunk(ns, runID, stream string, seq int64) {
	*e = append(*e, nsEvent{ns, backend.Event{Kind: backend.EventChunk, WorkflowRunID: runID, Stream: stream, Seq: seq}})
}

// scheduleChanged records that a schedule of namespace ns was created,
// changed or resumed (once per write and namespace).
func (e *events) scheduleChanged(ns string) {
	want := nsEvent{ns, backend.Event{Kind: backend.EventScheduleChanged}}
	for _, ev := range *e {
		if ev == want {
			return
		}
	}
	*e = append(*e, want)
}

// updateSettled records that update updateID of run runID of namespace ns
// was settled (rejected, completed or failed).
func (e *events) updateSettled(ns, runID, updateID string) {
	*e = append(*e, nsEvent{ns, backend.Event{Kind: backend.EventUpdateSettled, WorkflowRunID: runID, UpdateID: updateID}})
}

// runFinished records that run runID of namespace ns became terminal;
// f, if not nil, is how it ended (backend.Event.Finished).
func (e *events) runFinished(ns, runID string, f *backend.FinishedRun) {
	*e = append(*e, nsEvent{ns, backend.Event{Kind: backend.EventRunFinished, WorkflowRunID: runID, Finished: f}})
}

// finishedOf is how run ended, for backend.Event.Finished.
func finishedOf(run *backend.WorkflowRun) *backend.FinishedRun {
	return &backend.FinishedRun{Status: run.Status, Output: run.Output, Error: run.Error}
}

// runPaused records that run runID of namespace ns, leased to worker
// (slot) workerID, was paused while that worker executes it.
func (e *events) runPaused(ns, runID, workerID string) {
	*e = append(*e, nsEvent{ns, backend.Event{Kind: backend.EventRunPaused, WorkflowRunID: runID, WorkerID: workerID}})
}

// write runs fn in one BEGIN IMMEDIATE transaction and publishes the
// events fn recorded once it has committed. fn may run several times (a
// busy database is retried), so it must keep its results in variables it
// resets itself.
func (b *Backend) write(ctx context.Context, fn func(tx *txn, now time.Time, ev *events) error) error {
	return b.writeOn(ctx, false, fn)
}

// writeRelaxed is write with a commit that is not fsynced (synchronous
// NORMAL for that transaction): it survives the process's crash, and only
// a power loss or an OS crash may roll it back. It is for the claim alone
// (issue 24: one fsync less per run on the way to a run's first step):
// whoever saw the claim — the worker, in this process, or another process
// on this machine — dies with the machine, and the WAL is written in
// order, so the claimer's next fsynced commit makes the claim durable
// first. A claim rolled back leaves its run claimable, as if the claim
// had never been made.
func (b *Backend) writeRelaxed(ctx context.Context, fn func(tx *txn, now time.Time, ev *events) error) error {
	return b.writeOn(ctx, b.synchronous != "NORMAL", fn)
}

// writeOn is write; relaxed runs the transaction on a connection set to
// synchronous NORMAL, and sets it back to FULL before it returns to the
// pool (a connection that cannot be set back is closed).
func (b *Backend) writeOn(ctx context.Context, relaxed bool, fn func(tx *txn, now time.Time, ev *events) error) error {
	if ctx.Value(inTxKey{}) == b.file {
		return ErrWriteInsideTx
	}
	select {
	case b.file.writeLock <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-b.file.writeLock }()

	var ev events
	err := b.retryBusy(ctx, func() error {
		ev = ev[:0]
		if relaxed {
			return b.relaxedTx(ctx, func(sqlTx *sql.Tx) error {
				tx := &txn{Tx: sqlTx, stmts: b.stmts}
				if err := fn(tx, b.now(), &ev); err != nil {
					_ = tx.Rollback()
					return err
				}
				return tx.Commit()
			})
		}
		sqlTx, err := b.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		tx := &txn{Tx: sqlTx, stmts: b.stmts}
		if err := fn(tx, b.now(), &ev); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		if errors.Is(err, sql.ErrTxDone) && ctx.Err() != nil {
			// database/sql rolled the transaction back when ctx ended;
			// the statement after that failed with ErrTxDone. Say why.
			return fmt.Errorf("%w: %w", ctx.Err(), err)
		}
		return err
	}
	for _, e := range ev {
		b.file.hub(e.ns).Publish(e.Event)
	}
	return nil
}

// relaxedTx runs do in a transaction of a pool connection set to
// synchronous NORMAL for it (see writeRelaxed), setting it back to FULL
// afterwards; a connection that cannot be set back is discarded rather
// than returned to the pool.
func (b *Backend) relaxedTx(ctx context.Context, do func(*sql.Tx) error) error {
	conn, err := b.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA synchronous = NORMAL"); err != nil {
		return err
	}
	defer func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA synchronous = FULL"); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn }) // closed, not reused
		}
	}()
	sqlTx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	return do(sqlTx)
}

// reader returns the pool's querier, which uses the prepared statements.
func (b *Backend) reader() reader { return reader{db: b.db, stmts: b.stmts} }

// read runs fn, retrying it while the database reports busy.
func (b *Backend) read(ctx context.Context, fn func() error) error {
	return b.retryBusy(ctx, fn)
}

// retryBusy calls fn until it returns something other than SQLITE_BUSY or
// SQLITE_LOCKED, backing off from 1 ms to 100 ms, for at most ten busy
// timeouts or until ctx ends. Every operation of the backend goes through
// it, so it is where a damaged file stops the backend: once an error of
// fn says that the file is damaged (IsDamaged), that call and every later
// one, fn not called, fail with the file's *DamagedError.
func (b *Backend) retryBusy(ctx context.Context, fn func() error) error {
	if err := b.file.failed(); err != nil {
		return err
	}
	giveUp := time.Now().Add(10 * b.busyTimeout)
	delay := time.Millisecond
	for {
		err := fn()
		if err != nil && IsDamaged(err) {
			return b.file.latch(b.path, err)
		}
		if err == nil || !isBusy(err) || time.Now().After(giveUp) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, 100*time.Millisecond)
	}
}

// isBusy reports whether err is SQLite's "try again later" (SQLITE_BUSY or
// SQLITE_LOCKED, extended codes included).
func isBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}

// isConstraint reports whether err is a constraint violation (a foreign
// key naming a missing run or step, typically).
func isConstraint(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT
}
