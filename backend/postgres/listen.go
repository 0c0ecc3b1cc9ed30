package postgres

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/hub"
)

// Reconnection backoff of the listener: doubling from listenMinBackoff up to
// listenMaxBackoff, reset once LISTEN succeeds again. The cap is short so
// that wake-ups resume within about a second of a new primary becoming
// writable (a failover lasts seconds; one connection attempt a second per
// backend costs the server nothing).
const (
	listenMinBackoff = 100 * time.Millisecond
	listenMaxBackoff = time.Second
	// subscribeWait bounds how long Subscribe waits for the first LISTEN.
	subscribeWait = 5 * time.Second
)

// Subscribe implements [backend.Backend] with LISTEN/NOTIFY. The first call
// starts the backend's one listener goroutine, on a dedicated connection
// outside the pool, which LISTENs on the "openworkflow" channel and
// publishes the notifications of this backend's schema and namespace to
// every subscriber. It reconnects with backoff after errors; after a
// reconnection it publishes an [backend.EventWorkAvailable] event without
// run id and an [backend.EventResync], since notifications sent meanwhile
// were lost. [Backend.Close] stops it.
//
// Subscribe returns once the listener's first connection attempt is over
// (or ctx is done, or 5 s passed), so a write made after Subscribe returns is seen by the
// subscriber when the database is reachable. The channel is closed when ctx
// is done. It fails only on a closed backend.
func (b *Backend) Subscribe(ctx context.Context) (<-chan backend.Event, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errClosed
	}
	if b.listener == nil {
		cfg, err := b.listenConfig()
		if err != nil {
			b.mu.Unlock()
			return nil, err
		}
		b.listener = startListener(cfg, b.schema, b.namespace, &b.hub)
	}
	l := b.listener
	b.mu.Unlock()

	ch := b.hub.Subscribe(ctx)
	wait := time.NewTimer(subscribeWait)
	defer wait.Stop()
	select {
	case <-l.firstAttempt:
	case <-ctx.Done():
	case <-wait.C: // an unreachable server: events will flow once it is back
	}
	return ch, nil
}

// listener owns the goroutine that LISTENs and feeds the hub.
type listener struct {
	connConfig        *pgx.ConnConfig
	schema, namespace string
	hub               *hub.Hub

	cancel       context.CancelFunc
	done         chan struct{} // closed when the goroutine returned
	firstAttempt chan struct{} // closed when the first connection attempt is over
	pid          atomic.Uint32 // backend PID of the current connection, 0 if none (tests)
}

func startListener(cfg *pgx.ConnConfig, schema, namespace string, hub *hub.Hub) *listener {
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{
		connConfig:   cfg,
		schema:       schema,
		namespace:    namespace,
		hub:          hub,
		cancel:       cancel,
		done:         make(chan struct{}),
		firstAttempt: make(chan struct{}),
	}
	go l.run(ctx)
	return l
}

// stop ends the goroutine and waits for it.
func (l *listener) stop() {
	l.cancel()
	<-l.done
}

func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	backoff := listenMinBackoff
	first := true
	endFirstAttempt := func() {
		if first {
			first = false
			close(l.firstAttempt)
		}
	}
	for {
		l.listen(ctx, func() {
			if !first {
				// Notifications sent while disconnected are lost: idle
				// workers claim, waiters read again (the catch-up).
				l.hub.Publish(backend.Event{Kind: backend.EventWorkAvailable})
				l.hub.Publish(backend.Event{Kind: backend.EventResync})
			}
			endFirstAttempt()
			backoff = listenMinBackoff
		})
		endFirstAttempt()
		if ctx.Err() != nil {
			return
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, listenMaxBackoff)
	}
}

// listen connects, LISTENs, calls listening, then dispatches notifications
// until an error or ctx ends; the connection is closed on return.
func (l *listener) listen(ctx context.Context, listening func()) {
	conn, err := pgx.ConnectConfig(ctx, l.connConfig)
	if err != nil {
		return
	}
	defer func() {
		l.pid.Store(0)
		cctx, cancel := context.WithTimeout(context.Background(), lockReleaseTimeout)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return
	}
	l.pid.Store(conn.PgConn().PID())
	listening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return
		}
		for _, e := range l.decode(n.Payload) {
			l.hub.Publish(e)
		}
	}
}

// notification is the payload the queries build with json_build_object:
// one run (id), or the runs of a batch (ids); a chunk's also names its
// stream and number (append_chunk in sql/streams.sql); a schedule's
// (kind "schedule", sql/schedules.sql) names the schedule in id; an
// update's (kind "update", sql/updates.sql) names its run in id and the
// update in uid; a pause's (kind "paused", pause_run in sql/pause.sql)
// names the worker holding the run.
type notification struct {
	Schema    string   `json:"schema"`
	Namespace string   `json:"ns"`
	Kind      string   `json:"kind"`
	ID        string   `json:"id"`
	Worker    string   `json:"worker"`
	IDs       []string `json:"ids"`
	Stream    string   `json:"stream"`
	Seq       int64    `json:"seq"`
	UpdateID  string   `json:"uid"`
}

// decode parses a payload into its events (one per run of a batch
// payload), or none if it does not concern this backend.
func (l *listener) decode(payload string) []backend.Event {
	var n notification
	if err := json.Unmarshal([]byte(payload), &n); err != nil {
		return nil
	}
	if n.Schema != l.schema || n.Namespace != l.namespace {
		return nil
	}
	kind := backend.EventKind(n.Kind)
	switch kind {
	case backend.EventWorkAvailable, backend.EventRunFinished:
	case backend.EventChunk:
		return []backend.Event{{Kind: kind, WorkflowRunID: n.ID, Stream: n.Stream, Seq: n.Seq}}
	case backend.EventScheduleChanged:
		return []backend.Event{{Kind: kind}}
	case backend.EventUpdateSettled:
		return []backend.Event{{Kind: kind, WorkflowRunID: n.ID, UpdateID: n.UpdateID}}
	case backend.EventRunPaused:
		return []backend.Event{{Kind: kind, WorkflowRunID: n.ID, WorkerID: n.Worker}}
	default:
		return nil
	}
	if n.IDs == nil {
		return []backend.Event{{Kind: kind, WorkflowRunID: n.ID}}
	}
	events := make([]backend.Event, len(n.IDs))
	for i, id := range n.IDs {
		events[i] = backend.Event{Kind: kind, WorkflowRunID: id}
	}
	return events
}

// RecentFinish implements [backend.FinishRecorder]: the runs this backend
// completed or failed, and those its LISTEN connection announced as
// finished, the last 1,024 of them.
func (b *Backend) RecentFinish(workflowRunID string) (backend.Event, bool) {
	return b.hub.RecentFinish(workflowRunID)
}
