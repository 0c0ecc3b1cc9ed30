package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/openworkflow-go/openworkflow/backend"
)

var _ backend.TxStarter = (*Backend)(nil)

// ErrWriteInsideTx: a write method of the backend was called with the
// context of an [Backend.InTx] function, which holds the file's write
// lock: the call would wait for the transaction that waits for it. Write
// through the transaction instead (e.g. Client.StartTx).
var ErrWriteInsideTx = errors.New("sqlite backend: a write inside InTx must go through its transaction")

// inTxKey marks the context InTx gives its function, with the file whose
// write lock the transaction holds.
type inTxKey struct{}

// userTxs are the transactions of InTx in flight, with the events of the
// runs started in them, published after their commit.
type userTxs struct {
	mu  sync.Mutex
	txs map[*sql.Tx]*events
}

// InTx runs fn in one BEGIN IMMEDIATE transaction of the backend's
// database file and commits it when fn returns nil (rolls it back when fn
// returns an error or panics, and returns fn's error). Give fn's tx to
// Client.StartTx (or [Backend.CreateWorkflowRunTx]) to start runs in it,
// and use it for your own tables of the same file: the runs exist if and
// only if the transaction commits, and the workers of this process wake
// when it has committed (those of other processes find the runs at their
// next poll, as with every SQLite write).
//
// The transaction holds the file's write lock from its start: other
// writers, this process's workers included, wait for it, so keep fn
// short. Inside fn, use fn's ctx, and write through tx only: a write
// method of this backend called with that ctx fails at once with
// [ErrWriteInsideTx] rather than waiting for the lock fn holds.
func (b *Backend) InTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) (err error) {
	if ctx.Value(inTxKey{}) == b.file {
		return fmt.Errorf("InTx inside InTx: %w", ErrWriteInsideTx)
	}
	select {
	case b.file.writeLock <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-b.file.writeLock }()
	var tx *sql.Tx
	if err := b.retryBusy(ctx, func() (err error) {
		tx, err = b.db.BeginTx(ctx, nil)
		return err
	}); err != nil {
		return fmt.Errorf("begin a transaction: %w", err)
	}
	ev := &events{}
	b.file.userTxs.add(tx, ev)
	defer b.file.userTxs.remove(tx)
	committed := false
	defer func() {
		if !committed {
			_ = tx.Rollback()
		}
	}()
	if err := fn(context.WithValue(ctx, inTxKey{}, b.file), tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		if IsDamaged(err) {
			err = b.file.latch(b.path, err)
		}
		return fmt.Errorf("commit: %w", err)
	}
	committed = true
	for _, e := range b.file.userTxs.events(tx) {
		b.file.hub(e.ns).Publish(e.Event)
	}
	return nil
}

// CreateWorkflowRunTx implements [backend.TxStarter]: CreateWorkflowRun
// in tx, which must be the transaction of an [Backend.InTx] function on
// this file (the backend commits it, then wakes the workers); any other
// value fails with [backend.ErrInvalidArgument].
func (b *Backend) CreateWorkflowRunTx(ctx context.Context, tx any, p backend.CreateWorkflowRunParams) (*backend.WorkflowRun, error) {
	stx, ok := tx.(*sql.Tx)
	var ev *events
	if ok && stx != nil {
		ev = b.file.userTxs.lookup(stx)
	}
	if ev == nil {
		return nil, fmt.Errorf("create workflow run in a transaction: %w: the SQLite backend needs the *sql.Tx its InTx gives (it commits it and then wakes the workers), got %T",
			backend.ErrInvalidArgument, tx)
	}
	args, err := newCreateArgs(&p)
	if err != nil {
		return nil, fmt.Errorf("create workflow run: %w", err)
	}
	if err := b.file.failed(); err != nil {
		return nil, err
	}
	var created events
	run, err := b.createRun(ctx, &txn{Tx: stx, stmts: b.stmts}, b.now(), &created, &p, &args)
	if err != nil {
		if IsDamaged(err) {
			err = b.file.latch(b.path, err)
		}
		return nil, fmt.Errorf("create workflow run %q in a transaction: %w", p.WorkflowName, err)
	}
	b.file.userTxs.record(ev, created)
	return run, nil
}

// record adds the events of a start to those of its transaction.
func (u *userTxs) record(ev *events, add events) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, e := range add {
		if e.Kind == backend.EventWorkAvailable {
			ev.workAvailable(e.ns)
		} else {
			*ev = append(*ev, e)
		}
	}
}

func (u *userTxs) add(tx *sql.Tx, ev *events) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.txs == nil {
		u.txs = map[*sql.Tx]*events{}
	}
	u.txs[tx] = ev
}

func (u *userTxs) remove(tx *sql.Tx) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.txs, tx)
}

func (u *userTxs) lookup(tx *sql.Tx) *events {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.txs[tx]
}

// events returns a copy of the events recorded for tx.
func (u *userTxs) events(tx *sql.Tx) events {
	u.mu.Lock()
	defer u.mu.Unlock()
	if ev := u.txs[tx]; ev != nil {
		return append(events(nil), *ev...)
	}
	return nil
}
