package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

var _ backend.EventStore = (*Backend)(nil)

// effectLog collects what the events of one publish did, written with
// one insert_event_effects at the end of the publish's transaction.
type effectLog struct {
	eventIDs     []string
	seqs         []int32
	kinds, wfs   []string
	runs, msgs   []*string
	next         map[string]int32
	started      map[string][]string
	canceled     map[string][]string
	canceledRuns []*backend.WorkflowRun
}

// add records that event eventID did e.
func (l *effectLog) add(eventID string, e backend.EventEffect) {
	if l.next == nil {
		l.next, l.started, l.canceled = map[string]int32{}, map[string][]string{}, map[string][]string{}
	}
	l.next[eventID]++
	l.eventIDs = append(l.eventIDs, eventID)
	l.seqs = append(l.seqs, l.next[eventID])
	l.kinds = append(l.kinds, string(e.Kind))
	l.wfs = append(l.wfs, e.WorkflowName)
	l.runs = append(l.runs, e.WorkflowRunID)
	l.msgs = append(l.msgs, e.Message)
	if e.WorkflowRunID != nil {
		switch e.Kind {
		case backend.EffectStarted:
			l.started[eventID] = append(l.started[eventID], *e.WorkflowRunID)
		case backend.EffectCanceled:
			l.canceled[eventID] = append(l.canceled[eventID], *e.WorkflowRunID)
		}
	}
}

// storedTrigger is a declaration as publish reads it.
type storedTrigger struct {
	workflow, kind, eventName, condition string
	version, flow                        *string
}

// PublishEvents implements [backend.EventStore] in one transaction (see
// the interface): events without an idempotency key are inserted by one
// statement; each keyed event takes an advisory lock on its key, reads
// the key's holder, and is inserted unless the holder is within
// [backend.EventDedupPeriod]. Then the declarations on the new events'
// names are read in one statement, conditions evaluated by p.Matcher, and
// runs started (insert_run: the event id is new, so no earlier run can
// hold the run's idempotency key and no lookup is needed) or canceled
// (cancel_run). Canceled runs' parents are woken after the commit.
func (b *Backend) PublishEvents(ctx context.Context, p backend.PublishEventsParams) ([]backend.PublishedEvent, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("publish events: %w", err)
	}
	if out, ok, err := b.publishUnobserved(ctx, p.Events); ok || err != nil {
		if err != nil {
			return nil, fmt.Errorf("publish events: %w", err)
		}
		return out, nil
	}
	var out []backend.PublishedEvent
	var log effectLog
	err := b.inTx(ctx, func(tx pgx.Tx) error {
		out, log = make([]backend.PublishedEvent, len(p.Events)), effectLog{}
		fresh, err := b.insertEvents(ctx, tx, p.Events, out)
		if err != nil {
			return err
		}
		if len(fresh) == 0 {
			return nil
		}
		if err := b.reactToEvents(ctx, tx, fresh, p.Matcher, &log); err != nil {
			return err
		}
		if len(log.eventIDs) > 0 {
			if _, err := tx.Exec(ctx, b.q.InsertEventEffects, b.namespace, log.eventIDs, log.seqs, log.kinds, log.wfs, log.runs, log.msgs, b.at()); err != nil {
				return fmt.Errorf("record the effects: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("publish events: %w", err)
	}
	for i := range out {
		out[i].Started, out[i].Canceled = log.started[out[i].ID], log.canceled[out[i].ID]
	}
	var werr error
	for _, run := range log.canceledRuns {
		werr = errors.Join(werr, b.wakeParent(ctx, run))
	}
	return out, werr
}

// publishUnobserved publishes ps by one statement outside a transaction
// (insert_unobserved_events) when none has an idempotency key and no
// declaration or open wait is on any of their names, so that nothing is
// to react to them; ok is false, with nothing stored, when one has a key
// or a name is observed: the caller then publishes them in a transaction
// that reacts.
func (b *Backend) publishUnobserved(ctx context.Context, ps []backend.PublishEventParams) (out []backend.PublishedEvent, ok bool, err error) {
	ids, names, data, keys := make([]string, len(ps)), make([]string, len(ps)), make([]string, len(ps)), make([]*string, len(ps))
	for i, p := range ps {
		if p.IdempotencyKey != nil {
			return nil, false, nil
		}
		ids[i], names[i], data[i], keys[i] = id.New(id.PrefixEvent), p.Name, string(p.DataOrEmpty()), p.Key
	}
	rows, err := b.pool.Query(ctx, b.q.InsertUnobservedEvents, b.namespace, ids, names, data, keys, b.at())
	if err != nil {
		return nil, false, fmt.Errorf("insert events: %w", err)
	}
	var evID *string
	var seq *int64
	var at *time.Time
	n := 0
	_, err = pgx.ForEachRow(rows, []any{&evID, &seq, &at}, func() error {
		if evID != nil {
			n++
		}
		return nil
	})
	if err != nil || n == 0 {
		return nil, false, err
	}
	if n != len(ps) {
		return nil, false, fmt.Errorf("insert events: %d of %d inserted", n, len(ps))
	}
	out = make([]backend.PublishedEvent, len(ps))
	for i := range out {
		out[i].ID = ids[i]
	}
	return out, true, nil
}

// insertEvents inserts the events of ps (out gets their ids) and returns
// the new ones, in order.
func (b *Backend) insertEvents(ctx context.Context, tx pgx.Tx, ps []backend.PublishEventParams, out []backend.PublishedEvent) ([]*backend.EventRecord, error) {
	fresh := make([]*backend.EventRecord, len(ps))
	var ids, names, data []string
	var keys []*string
	var plain []int
	// flush inserts the events without an idempotency key gathered so far
	// in one statement, before a keyed one, so seq follows the order of ps.
	flush := func() error {
		if len(plain) == 0 {
			return nil
		}
		rows, err := tx.Query(ctx, b.q.InsertEvents, b.namespace, ids, names, data, keys, b.at())
		if err != nil {
			return fmt.Errorf("insert events: %w", err)
		}
		byID := make(map[string]*backend.EventRecord, len(plain))
		for _, i := range plain {
			byID[fresh[i].ID] = fresh[i]
		}
		var evID string
		var seq int64
		var at time.Time
		_, err = pgx.ForEachRow(rows, []any{&evID, &seq, &at}, func() error {
			if ev := byID[evID]; ev != nil {
				ev.Seq, ev.CreatedAt = seq, at.UTC()
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("insert events: %w", err)
		}
		ids, names, data, keys, plain = ids[:0], names[:0], data[:0], keys[:0], plain[:0]
		return nil
	}
	// The keys' locks are taken first, in sorted order, so that two
	// batches holding the same keys in other orders cannot deadlock.
	var locks []string
	for _, p := range ps {
		if p.IdempotencyKey != nil {
			locks = append(locks, lockText(b.namespace, *p.IdempotencyKey))
		}
	}
	slices.Sort(locks)
	for _, l := range slices.Compact(locks) {
		if _, err := tx.Exec(ctx, b.q.LockEventKey, l); err != nil {
			return nil, err
		}
	}
	for i, p := range ps {
		ev := &backend.EventRecord{NamespaceID: b.namespace, ID: id.New(id.PrefixEvent), Name: p.Name, Data: p.DataOrEmpty(), Key: p.Key, IdempotencyKey: p.IdempotencyKey}
		out[i].ID = ev.ID
		if p.IdempotencyKey == nil {
			plain = append(plain, i)
			ids, names, data, keys = append(ids, ev.ID), append(names, ev.Name), append(data, string(ev.Data)), append(keys, ev.Key)
			fresh[i] = ev
			continue
		}
		if err := flush(); err != nil {
			return nil, err
		}
		key := *p.IdempotencyKey
		var holder string
		var within bool
		err := tx.QueryRow(ctx, b.q.EventByIdempotencyKey, b.namespace, key, backend.EventDedupPeriod.Milliseconds(), b.at()).Scan(&holder, &within)
		switch {
		case err == nil && within:
			out[i] = backend.PublishedEvent{ID: holder, Duplicate: true}
			continue
		case err == nil:
			if _, err := tx.Exec(ctx, b.q.ClearEventIdempotencyKey, b.namespace, key); err != nil {
				return nil, err
			}
		case !errors.Is(err, pgx.ErrNoRows):
			return nil, err
		}
		if err := tx.QueryRow(ctx, b.q.InsertEvent, b.namespace, ev.ID, ev.Name, string(ev.Data), ev.Key, ev.IdempotencyKey, b.at()).Scan(&ev.Seq, &ev.CreatedAt); err != nil {
			return nil, fmt.Errorf("insert event %q: %w", ev.Name, err)
		}
		ev.CreatedAt = ev.CreatedAt.UTC()
		fresh[i] = ev
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(fresh, func(e *backend.EventRecord) bool { return e == nil }), nil
}

// reactToEvents starts and cancels runs as the declarations on the new
// events' names say, then hands each event to the other consumers
// (deliverEvent).
func (b *Backend) reactToEvents(ctx context.Context, tx pgx.Tx, evs []*backend.EventRecord, m backend.EventMatcher, log *effectLog) error {
	names := make([]string, 0, len(evs))
	for _, ev := range evs {
		if !slices.Contains(names, ev.Name) {
			names = append(names, ev.Name)
		}
	}
	rows, err := tx.Query(ctx, b.q.EventTriggersByName, b.namespace, names)
	if err != nil {
		return fmt.Errorf("read the event triggers: %w", err)
	}
	byName := map[string][]storedTrigger{}
	var t storedTrigger
	_, err = pgx.ForEachRow(rows, []any{&t.workflow, &t.version, &t.kind, &t.eventName, &t.condition, &t.flow}, func() error {
		byName[t.eventName] = append(byName[t.eventName], t)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the event triggers: %w", err)
	}
	for _, ev := range evs {
		started := map[string]bool{}
		for _, t := range byName[ev.Name] {
			switch backend.EventTriggerKind(t.kind) {
			case backend.TriggerStart:
				if started[t.workflow] || !match(ctx, m, t, ev, nil, nil, log) {
					continue
				}
				started[t.workflow] = true
				effect, err := b.startTriggered(ctx, tx, t, ev)
				if err != nil {
					return fmt.Errorf("start workflow %q for event %s: %w", t.workflow, ev.ID, err)
				}
				log.add(ev.ID, effect)
			case backend.TriggerCancel:
				if err := b.cancelOnEvent(ctx, tx, m, t, ev, log); err != nil {
					return fmt.Errorf("cancel runs of workflow %q for event %s: %w", t.workflow, ev.ID, err)
				}
			}
		}
		if err := b.deliverEvent(ctx, tx, ev, m, log); err != nil {
			return err
		}
	}
	return nil
}

// match evaluates t's condition on ev (and a run's input), recording an
// evaluation error as the event's effect; an error is no match.
func match(ctx context.Context, m backend.EventMatcher, t storedTrigger, ev *backend.EventRecord, runID *string, input []byte, log *effectLog) bool {
	ok, err := backend.MatchEvent(ctx, m, t.condition, ev, input)
	if err != nil {
		msg := fmt.Sprintf("%s trigger on %q, condition %q: %v", t.kind, t.eventName, t.condition, err)
		log.add(ev.ID, backend.EventEffect{Kind: backend.EffectError, WorkflowName: t.workflow, WorkflowRunID: runID, Message: &msg})
		return false
	}
	return ok
}

// startTriggered does in tx what trigger t does for event ev, and
// returns the effect to record: with its flow control's batch, append
// ev to the workflow's batch (appendInTx, which may flush it); with its
// singleton, create the run as a singleton start (createInTx: skipped,
// held or canceling as the key's mode says); else insert the run
// (insert_run: the event id is new, so no earlier run can hold the run's
// idempotency key and no lookup is needed).
func (b *Backend) startTriggered(ctx context.Context, tx pgx.Tx, t storedTrigger, ev *backend.EventRecord) (backend.EventEffect, error) {
	effect := backend.EventEffect{Kind: backend.EffectStarted, WorkflowName: t.workflow}
	item, p, err := backend.PlanTriggeredStart(t.workflow, t.version, t.flow, ev)
	if err != nil {
		return effect, err
	}
	if item != nil {
		added, err := b.appendInTx(ctx, tx, *item)
		if err != nil {
			return effect, err
		}
		return backend.BatchedEffect(t.workflow, added), nil
	}
	if err := validateCreate(p); err != nil {
		return effect, err
	}
	runID := id.New(id.PrefixRun)
	var esc escapes
	args := b.insertRunArgs(runID, p, &esc)
	if p.Singleton != nil {
		run, existed, err := b.createInTx(ctx, tx, p, &esc, args)
		if err != nil {
			return effect, err
		}
		if existed {
			effect.Kind = backend.EffectSkipped
		}
		effect.WorkflowRunID = &run.ID
		return effect, nil
	}
	run, err := queryRun(ctx, tx, b.q.InsertRun, args...)
	if err != nil {
		return effect, err
	}
	effect.WorkflowRunID = &run.ID
	return effect, b.recordEscapes(ctx, tx, &esc)
}

// cancelOnEvent cancels the active runs of t's workflow whose input
// matches t's condition with ev. With an equality event.<path> ==
// input.<path> in the condition (backend.CancelOnLookup) the condition is
// evaluated only on the runs whose input holds ev's value there
// (active_runs_of_workflow_by_input); without one, on the oldest
// backend.MaxUnindexedCancelRunsPerPublish unfinished runs.
func (b *Backend) cancelOnEvent(ctx context.Context, tx pgx.Tx, m backend.EventMatcher, t storedTrigger, ev *backend.EventRecord, log *effectLog) error {
	xe, err := backend.ExprEvent(ev)
	if err != nil {
		return err
	}
	var rows pgx.Rows
	if path, value, ok := backend.CancelOnLookup(t.condition, xe); ok {
		rows, err = tx.Query(ctx, b.q.ActiveRunsOfWorkflowByInput, b.namespace, t.workflow, path, string(value))
	} else {
		rows, err = tx.Query(ctx, b.q.ActiveRunsOfWorkflow, b.namespace, t.workflow, backend.MaxUnindexedCancelRunsPerPublish)
	}
	if err != nil {
		return err
	}
	runs, err := pgx.CollectRows(rows, scanRun)
	if err != nil {
		return err
	}
	if err := b.decodeRuns(ctx, runs...); err != nil {
		return err
	}
	for _, r := range runs {
		if !match(ctx, m, t, ev, &r.ID, r.Input, log) {
			continue
		}
		canceled, err := queryRun(ctx, tx, b.q.CancelRun, b.namespace, r.ID, b.at())
		if errors.Is(err, pgx.ErrNoRows) {
			continue // finished meanwhile
		}
		if err != nil {
			return err
		}
		log.canceledRuns = append(log.canceledRuns, canceled)
		log.add(ev.ID, backend.EventEffect{Kind: backend.EffectCanceled, WorkflowName: t.workflow, WorkflowRunID: &canceled.ID})
	}
	return nil
}

// scanEvent reads event_columns.
func scanEvent(row pgx.Row) (*backend.EventRecord, error) {
	var e backend.EventRecord
	var data string
	if err := row.Scan(&e.NamespaceID, &e.ID, &e.Seq, &e.Name, &data, &e.Key, &e.IdempotencyKey, &e.CreatedAt); err != nil {
		return nil, err
	}
	e.Data, e.CreatedAt = []byte(data), e.CreatedAt.UTC()
	return &e, nil
}

// GetEvent implements [backend.EventStore].
func (b *Backend) GetEvent(ctx context.Context, eventID string) (*backend.EventRecord, error) {
	if !backend.ValidText(eventID) {
		return nil, fmt.Errorf("get event %q: %w", eventID, backend.ErrEventNotFound)
	}
	ev, err := scanEvent(b.pool.QueryRow(ctx, b.q.GetEvent, b.namespace, eventID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("get event %q: %w", eventID, backend.ErrEventNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get event %q: %w", eventID, err)
	}
	rows, err := b.pool.Query(ctx, b.q.EventEffects, b.namespace, eventID)
	if err != nil {
		return nil, fmt.Errorf("get event %q: %w", eventID, err)
	}
	var f backend.EventEffect
	var kind string
	_, err = pgx.ForEachRow(rows, []any{&kind, &f.WorkflowName, &f.WorkflowRunID, &f.Message, &f.CreatedAt}, func() error {
		f.Kind, f.CreatedAt = backend.EventEffectKind(kind), f.CreatedAt.UTC()
		ev.Effects = append(ev.Effects, f)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("get event %q: %w", eventID, err)
	}
	return ev, nil
}

// ListEvents implements [backend.EventStore].
func (b *Backend) ListEvents(ctx context.Context, p backend.ListEventsParams) (*backend.Page[backend.EventRecord], error) {
	limit, _, _, err := backend.ResolvePage(p.Limit, "", "")
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	after, err := backend.DecodeEventCursor(p.After)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	var name *string
	if p.Name != "" {
		name = &p.Name
	}
	var below *int64
	if after > 0 {
		below = &after
	}
	rows, err := b.pool.Query(ctx, b.q.ListEvents, b.namespace, name, below, limit+1)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (backend.EventRecord, error) {
		e, err := scanEvent(r)
		if err != nil {
			return backend.EventRecord{}, err
		}
		return *e, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return backend.EventPage(evs, limit), nil
}

// PutEventTriggers implements [backend.EventStore] in one transaction
// under an advisory lock on the workflow.
func (b *Backend) PutEventTriggers(ctx context.Context, workflowName string, ts []backend.EventTrigger, declaredBy string) (bool, error) {
	if err := backend.ValidateEventTriggers(workflowName, ts); err != nil {
		return false, fmt.Errorf("put event triggers: %w", err)
	}
	ts = backend.SortEventTriggers(ts)
	changed := false
	err := b.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, b.q.LockEventTriggers, lockText(b.namespace, workflowName)); err != nil {
			return err
		}
		old, err := b.listTriggers(ctx, tx, &workflowName)
		if err != nil {
			return err
		}
		if changed = !backend.SameEventTriggers(old, ts); !changed {
			return nil
		}
		if _, err := tx.Exec(ctx, b.q.DeleteEventTriggers, b.namespace, workflowName); err != nil {
			return err
		}
		if len(ts) == 0 {
			return nil
		}
		kinds, pos, names, conds, flows := backend.EventTriggerArrays(ts)
		_, err = tx.Exec(ctx, b.q.InsertEventTriggers, b.namespace, workflowName, kinds, pos, names, conds, flows, ts[0].Version, declaredBy, b.at())
		return err
	})
	if err != nil {
		return false, fmt.Errorf("put event triggers of workflow %q: %w", workflowName, err)
	}
	return changed, nil
}

// ListEventTriggers implements [backend.EventStore].
func (b *Backend) ListEventTriggers(ctx context.Context, workflowName string) ([]backend.EventTrigger, error) {
	var name *string
	if workflowName != "" {
		name = &workflowName
	}
	ts, err := b.listTriggers(ctx, b.pool, name)
	if err != nil {
		return nil, fmt.Errorf("list event triggers: %w", err)
	}
	return ts, nil
}

func (b *Backend) listTriggers(ctx context.Context, q querier, workflowName *string) ([]backend.EventTrigger, error) {
	rows, err := q.Query(ctx, b.q.ListEventTriggers, b.namespace, workflowName)
	if err != nil {
		return nil, err
	}
	out := []backend.EventTrigger{}
	var t backend.EventTrigger
	var kind string
	var flow *string
	_, err = pgx.ForEachRow(rows, []any{&t.WorkflowName, &t.Version, &kind, &t.EventName, &t.Condition, &t.DeclaredBy, &t.UpdatedAt, &flow}, func() error {
		t.Kind, t.UpdatedAt = backend.EventTriggerKind(kind), t.UpdatedAt.UTC()
		if err := t.ParseTriggerFlow(flow); err != nil {
			return err
		}
		out = append(out, t)
		return nil
	})
	return out, err
}

// PruneEvents implements [backend.EventStore] with one statement.
func (b *Backend) PruneEvents(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int
	if err := b.pool.QueryRow(ctx, b.q.PruneEvents, b.namespace, ms(cutoff), limit).Scan(&n); err != nil {
		return 0, fmt.Errorf("prune events: %w", err)
	}
	return n, nil
}

// lockText is the text an advisory lock of (namespace, name) hashes: the
// namespace's length first, so that no two pairs give the same text.
func lockText(namespace, name string) string {
	return strconv.Itoa(len(namespace)) + ":" + namespace + ":" + name
}
