package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/eventexpr"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

var _ backend.EventStore = (*Backend)(nil)

// effectLog collects what the events of one publish did; each effect is
// inserted as it is added, in the publish's transaction.
type effectLog struct {
	ctx      context.Context
	tx       *txn
	stmt     string // insert_event_effect
	ns       string
	now      time.Time
	next     map[string]int
	started  map[string][]string
	canceled map[string][]string
	err      error
}

// add records that event eventID did e; the first failure is kept in
// l.err and fails the publish.
func (l *effectLog) add(eventID string, e backend.EventEffect) {
	l.next[eventID]++
	if l.err == nil {
		_, l.err = l.tx.ExecContext(l.ctx, l.stmt,
			sql.Named("ns", l.ns), sql.Named("event_id", eventID), sql.Named("seq", l.next[eventID]),
			sql.Named("kind", string(e.Kind)), sql.Named("workflow_name", e.WorkflowName),
			sql.Named("run_id", nullStringArg(e.WorkflowRunID)), sql.Named("message", nullStringArg(e.Message)),
			sql.Named("now", timeArg(l.now)))
	}
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

// PublishEvents implements [backend.EventStore] in one BEGIN IMMEDIATE
// transaction (see the interface).
func (b *Backend) PublishEvents(ctx context.Context, p backend.PublishEventsParams) ([]backend.PublishedEvent, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("publish events: %w", err)
	}
	var out []backend.PublishedEvent
	var log *effectLog
	err := b.write(ctx, func(tx *txn, now time.Time, evs *events) error {
		out = make([]backend.PublishedEvent, len(p.Events))
		log = &effectLog{ctx: ctx, tx: tx, stmt: b.q.InsertEventEffect, ns: b.ns, now: now, next: map[string]int{}, started: map[string][]string{}, canceled: map[string][]string{}}
		triggers := map[string][]storedTrigger{}
		for i, pe := range p.Events {
			ev, dup, err := b.insertEvent(ctx, tx, now, pe)
			if err != nil {
				return err
			}
			out[i].ID = ev.ID
			if dup {
				out[i].Duplicate = true
				continue
			}
			ts, ok := triggers[ev.Name]
			if !ok {
				if ts, err = b.triggersOn(ctx, tx, ev.Name); err != nil {
					return err
				}
				triggers[ev.Name] = ts
			}
			if err := b.reactToEvent(ctx, tx, now, evs, ev, ts, p.Matcher, log); err != nil {
				return err
			}
			if log.err != nil {
				return fmt.Errorf("record the effects: %w", log.err)
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
	return out, nil
}

// insertEvent inserts pe, or returns the holder of its idempotency key
// within the dedup window (dup).
func (b *Backend) insertEvent(ctx context.Context, tx *txn, now time.Time, pe backend.PublishEventParams) (*backend.EventRecord, bool, error) {
	ev := &backend.EventRecord{NamespaceID: b.ns, ID: id.New(id.PrefixEvent), Name: pe.Name, Data: pe.DataOrEmpty(),
		Key: pe.Key, IdempotencyKey: pe.IdempotencyKey, CreatedAt: now.UTC().Truncate(time.Millisecond)}
	if pe.IdempotencyKey != nil {
		var holder string
		var within bool
		err := tx.QueryRowContext(ctx, b.q.EventByIdempotencyKey, sql.Named("ns", b.ns), sql.Named("key", *pe.IdempotencyKey),
			sql.Named("since", timeArg(now.Add(-backend.EventDedupPeriod)))).Scan(&holder, &within)
		switch {
		case err == nil && within:
			return &backend.EventRecord{ID: holder}, true, nil
		case err == nil:
			if _, err := tx.ExecContext(ctx, b.q.ClearEventIdempotencyKey, sql.Named("ns", b.ns), sql.Named("key", *pe.IdempotencyKey)); err != nil {
				return nil, false, err
			}
		case !errors.Is(err, sql.ErrNoRows):
			return nil, false, err
		}
	}
	err := tx.QueryRowContext(ctx, b.q.InsertEvent, sql.Named("ns", b.ns), sql.Named("id", ev.ID), sql.Named("name", ev.Name),
		sql.Named("data", string(ev.Data)), sql.Named("key", nullStringArg(ev.Key)),
		sql.Named("idempotency_key", nullStringArg(ev.IdempotencyKey)), sql.Named("now", timeArg(now))).Scan(&ev.Seq)
	if err != nil {
		return nil, false, fmt.Errorf("insert event %q: %w", ev.Name, err)
	}
	return ev, false, nil
}

// triggersOn reads the declarations on event name.
func (b *Backend) triggersOn(ctx context.Context, tx *txn, name string) ([]storedTrigger, error) {
	rows, err := tx.QueryContext(ctx, b.q.EventTriggersByName, sql.Named("ns", b.ns), sql.Named("name", name))
	if err != nil {
		return nil, fmt.Errorf("read the event triggers: %w", err)
	}
	defer rows.Close()
	var out []storedTrigger
	for rows.Next() {
		var t storedTrigger
		var version, flow sql.NullString
		if err := rows.Scan(&t.workflow, &version, &t.kind, &t.eventName, &t.condition, &flow); err != nil {
			return nil, err
		}
		if version.Valid {
			t.version = &version.String
		}
		if flow.Valid {
			t.flow = &flow.String
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// reactToEvent starts and cancels runs as ts say, then hands ev to the
// other consumers (deliverEvent).
func (b *Backend) reactToEvent(ctx context.Context, tx *txn, now time.Time, evs *events, ev *backend.EventRecord, ts []storedTrigger, m backend.EventMatcher, log *effectLog) error {
	started := map[string]bool{}
	for _, t := range ts {
		switch backend.EventTriggerKind(t.kind) {
		case backend.TriggerStart:
			if started[t.workflow] || !match(ctx, m, t, ev, nil, nil, log) {
				continue
			}
			started[t.workflow] = true
			effect, err := b.startTriggered(ctx, tx, now, evs, t, ev)
			if err != nil {
				return fmt.Errorf("start workflow %q for event %s: %w", t.workflow, ev.ID, err)
			}
			log.add(ev.ID, effect)
		case backend.TriggerCancel:
			if err := b.cancelOnEvent(ctx, tx, now, evs, m, t, ev, log); err != nil {
				return fmt.Errorf("cancel runs of workflow %q for event %s: %w", t.workflow, ev.ID, err)
			}
		}
	}
	return b.deliverEvent(ctx, tx, now, evs, ev, m, log)
}

// startTriggered does in tx what trigger t does for event ev, and
// returns the effect to record: with its flow control's batch, append
// ev to the workflow's batch (appendBatchItem, which may flush it); else
// create the run (createRun, a singleton start with its singleton:
// skipped, held or canceling as the key's mode says).
func (b *Backend) startTriggered(ctx context.Context, tx *txn, now time.Time, evs *events, t storedTrigger, ev *backend.EventRecord) (backend.EventEffect, error) {
	effect := backend.EventEffect{Kind: backend.EffectStarted, WorkflowName: t.workflow}
	item, p, err := backend.PlanTriggeredStart(t.workflow, t.version, t.flow, ev)
	if err != nil {
		return effect, err
	}
	if item != nil {
		added, err := b.appendBatchItem(ctx, tx, now, evs, *item)
		if err != nil {
			return effect, err
		}
		return backend.BatchedEffect(t.workflow, added), nil
	}
	args, err := newCreateArgs(&p)
	if err != nil {
		return effect, err
	}
	run, err := b.createRun(ctx, tx, now, evs, &p, &args)
	if err != nil {
		return effect, err
	}
	if run.SingletonSkipped {
		effect.Kind = backend.EffectSkipped
	}
	effect.WorkflowRunID = &run.ID
	return effect, nil
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

// cancelOnEvent cancels the active runs of t's workflow whose input
// matches t's condition with ev, as CancelWorkflowRun does. With an
// equality event.<path> == input.<path> in the condition
// (backend.CancelOnLookup) the condition is evaluated only on the runs
// whose input holds ev's value there; without one, on the oldest
// backend.MaxUnindexedCancelRunsPerPublish unfinished runs.
func (b *Backend) cancelOnEvent(ctx context.Context, tx *txn, now time.Time, evs *events, m backend.EventMatcher, t storedTrigger, ev *backend.EventRecord, log *effectLog) error {
	xe, err := backend.ExprEvent(ev)
	if err != nil {
		return err
	}
	var rows *sql.Rows
	if path, value, ok := cancelOnLookup(t.condition, xe); ok {
		rows, err = tx.QueryContext(ctx, b.q.ActiveRunsOfWorkflowByInput, sql.Named("ns", b.ns), sql.Named("workflow_name", t.workflow),
			sql.Named("path", path), sql.Named("value", value))
	} else {
		rows, err = tx.QueryContext(ctx, b.q.ActiveRunsOfWorkflow, sql.Named("ns", b.ns), sql.Named("workflow_name", t.workflow),
			sql.Named("limit", backend.MaxUnindexedCancelRunsPerPublish))
	}
	if err != nil {
		return err
	}
	var runs []*backend.WorkflowRun
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			rows.Close()
			return err
		}
		runs = append(runs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, r := range runs {
		if !match(ctx, m, t, ev, &r.ID, r.Input, log) {
			continue
		}
		run, err := scanRun(tx.QueryRowContext(ctx, b.q.CancelRun, sql.Named("ns", b.ns), sql.Named("run_id", r.ID), sql.Named("now", timeArg(now))))
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return err
		}
		evs.runFinished(b.ns, run.ID, nil)
		if err := b.wakeParent(ctx, tx, run, now, evs); err != nil {
			return err
		}
		log.add(ev.ID, backend.EventEffect{Kind: backend.EffectCanceled, WorkflowName: t.workflow, WorkflowRunID: &run.ID})
	}
	return nil
}

// cancelOnLookup is backend.CancelOnLookup in json_extract's terms: the
// JSON path ($."a"."b") and the value as json_extract gives it (a string,
// a float64, 1 or 0 for a bool). ok is false without a lookup, or for a
// path segment that would need escaping in a JSON path.
func cancelOnLookup(condition string, ev eventexpr.Event) (path string, value any, ok bool) {
	segs, raw, ok := backend.CancelOnLookup(condition, ev)
	if !ok {
		return "", nil, false
	}
	var sb strings.Builder
	sb.WriteString("$")
	for _, s := range segs {
		if strings.ContainsAny(s, "\"\\") {
			return "", nil, false
		}
		sb.WriteString(`."` + s + `"`)
	}
	if err := json.Unmarshal(raw, &value); err != nil {
		return "", nil, false
	}
	if b, isBool := value.(bool); isBool {
		value = 0
		if b {
			value = 1
		}
	}
	return sb.String(), value, true
}

// scanEvent reads event_columns.
func scanEvent(s scanner) (*backend.EventRecord, error) {
	var e backend.EventRecord
	var data, created string
	var key, idem sql.NullString
	if err := s.Scan(&e.NamespaceID, &e.ID, &e.Seq, &e.Name, &data, &key, &idem, &created); err != nil {
		return nil, err
	}
	e.Data = []byte(data)
	if key.Valid {
		e.Key = &key.String
	}
	if idem.Valid {
		e.IdempotencyKey = &idem.String
	}
	var err error
	if e.CreatedAt, err = backend.ParseTime(created); err != nil {
		return nil, fmt.Errorf("event %s: created_at %q: %w", e.ID, created, err)
	}
	return &e, nil
}

// GetEvent implements [backend.EventStore].
func (b *Backend) GetEvent(ctx context.Context, eventID string) (*backend.EventRecord, error) {
	var ev *backend.EventRecord
	err := b.read(ctx, func() error {
		var err error
		ev, err = scanEvent(b.db.QueryRowContext(ctx, b.q.GetEvent, sql.Named("ns", b.ns), sql.Named("id", eventID)))
		if errors.Is(err, sql.ErrNoRows) {
			return backend.ErrEventNotFound
		}
		if err != nil {
			return err
		}
		rows, err := b.db.QueryContext(ctx, b.q.EventEffects, sql.Named("ns", b.ns), sql.Named("id", eventID))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var f backend.EventEffect
			var kind, created string
			var run, msg sql.NullString
			if err := rows.Scan(&kind, &f.WorkflowName, &run, &msg, &created); err != nil {
				return err
			}
			f.Kind = backend.EventEffectKind(kind)
			if run.Valid {
				f.WorkflowRunID = &run.String
			}
			if msg.Valid {
				f.Message = &msg.String
			}
			if f.CreatedAt, err = backend.ParseTime(created); err != nil {
				return err
			}
			ev.Effects = append(ev.Effects, f)
		}
		return rows.Err()
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
	var name, below any
	if p.Name != "" {
		name = p.Name
	}
	if after > 0 {
		below = after
	}
	var evs []backend.EventRecord
	err = b.read(ctx, func() error {
		evs = nil
		rows, err := b.db.QueryContext(ctx, b.q.ListEvents, sql.Named("ns", b.ns), sql.Named("name", name),
			sql.Named("below", below), sql.Named("limit", limit+1))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			e, err := scanEvent(rows)
			if err != nil {
				return err
			}
			evs = append(evs, *e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return backend.EventPage(evs, limit), nil
}

// PutEventTriggers implements [backend.EventStore] in one write
// transaction.
func (b *Backend) PutEventTriggers(ctx context.Context, workflowName string, ts []backend.EventTrigger, declaredBy string) (bool, error) {
	if err := backend.ValidateEventTriggers(workflowName, ts); err != nil {
		return false, fmt.Errorf("put event triggers: %w", err)
	}
	ts = backend.SortEventTriggers(ts)
	changed := false
	err := b.write(ctx, func(tx *txn, now time.Time, _ *events) error {
		old, err := b.listTriggers(ctx, tx.QueryContext, workflowName)
		if err != nil {
			return err
		}
		if changed = !backend.SameEventTriggers(old, ts); !changed {
			return nil
		}
		if _, err := tx.ExecContext(ctx, b.q.DeleteEventTriggers, sql.Named("ns", b.ns), sql.Named("workflow_name", workflowName)); err != nil {
			return err
		}
		kinds, pos, names, conds, flows := backend.EventTriggerArrays(ts)
		for i := range ts {
			if _, err := tx.ExecContext(ctx, b.q.InsertEventTrigger, sql.Named("ns", b.ns), sql.Named("workflow_name", workflowName),
				sql.Named("kind", kinds[i]), sql.Named("position", pos[i]), sql.Named("event_name", names[i]),
				sql.Named("condition", conds[i]), sql.Named("flow", nullStringArg(flows[i])), sql.Named("version", nullStringArg(ts[i].Version)),
				sql.Named("declared_by", declaredBy), sql.Named("now", timeArg(now))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("put event triggers of workflow %q: %w", workflowName, err)
	}
	return changed, nil
}

// ListEventTriggers implements [backend.EventStore].
func (b *Backend) ListEventTriggers(ctx context.Context, workflowName string) ([]backend.EventTrigger, error) {
	var out []backend.EventTrigger
	err := b.read(ctx, func() (err error) {
		out, err = b.listTriggers(ctx, b.db.QueryContext, workflowName)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list event triggers: %w", err)
	}
	return out, nil
}

func (b *Backend) listTriggers(ctx context.Context, query func(context.Context, string, ...any) (*sql.Rows, error), workflowName string) ([]backend.EventTrigger, error) {
	var name any
	if workflowName != "" {
		name = workflowName
	}
	rows, err := query(ctx, b.q.ListEventTriggers, sql.Named("ns", b.ns), sql.Named("workflow_name", name))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []backend.EventTrigger{}
	for rows.Next() {
		var t backend.EventTrigger
		var kind, updated string
		var version, flow sql.NullString
		if err := rows.Scan(&t.WorkflowName, &version, &kind, &t.EventName, &t.Condition, &t.DeclaredBy, &updated, &flow); err != nil {
			return nil, err
		}
		var flowText *string
		if flow.Valid {
			flowText = &flow.String
		}
		if err := t.ParseTriggerFlow(flowText); err != nil {
			return nil, err
		}
		t.Kind = backend.EventTriggerKind(kind)
		if version.Valid {
			t.Version = &version.String
		}
		if t.UpdatedAt, err = backend.ParseTime(updated); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// PruneEvents implements [backend.EventStore] in one write transaction:
// the batch's effects, then its events.
func (b *Backend) PruneEvents(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int64
	err := b.write(ctx, func(tx *txn, _ time.Time, _ *events) error {
		args := []any{sql.Named("ns", b.ns), sql.Named("cutoff", timeArg(cutoff)), sql.Named("limit", limit)}
		if _, err := tx.ExecContext(ctx, b.q.PruneEventEffects, args...); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, b.q.PruneEvents, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune events: %w", err)
	}
	return int(n), nil
}
