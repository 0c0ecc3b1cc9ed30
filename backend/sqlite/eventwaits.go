package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

var _ backend.EventWaiter = (*Backend)(nil)

// OpenEventWait implements [backend.EventWaiter] in one BEGIN IMMEDIATE
// transaction (sql/eventwaits.sql): store the wait unless stored, and for
// a new wait with a look-back deliver it the oldest stored matching event
// of its window.
func (b *Backend) OpenEventWait(ctx context.Context, p backend.OpenEventWaitParams) (*backend.EventWait, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out *backend.EventWait
	err := b.write(ctx, func(tx *txn, now time.Time, _ *events) error {
		var since *time.Time
		if p.Lookback > 0 {
			s := now.Add(-p.Lookback)
			since = &s
		}
		var input any
		if len(p.Input) > 0 {
			input = string(p.Input)
		}
		var afterSeq int64
		var sinceAt sql.NullString
		err := tx.QueryRowContext(ctx, b.q.InsertEventWait, sql.Named("ns", b.ns), sql.Named("step_id", p.StepAttemptID),
			sql.Named("run_id", p.WorkflowRunID), sql.Named("workflow", p.WorkflowName), sql.Named("step_name", p.StepName),
			sql.Named("event_name", p.EventName), sql.Named("match", p.Match), sql.Named("input", input),
			sql.Named("index_path", nullStringArg(p.IndexPath)), sql.Named("index_value", nullStringArg(p.IndexValue)),
			sql.Named("since_at", nullTimeArg(since)), sql.Named("timeout_at", timeArg(p.TimeoutAt)),
			sql.Named("now", timeArg(now))).Scan(&afterSeq, &sinceAt)
		switch {
		case errors.Is(err, sql.ErrNoRows): // stored before: a replay
		case err != nil:
			return err
		case since != nil:
			if err := b.deliverLookback(ctx, tx, now, p, afterSeq, *since); err != nil {
				return err
			}
		}
		out, err = scanEventWait(tx.QueryRowContext(ctx, b.q.GetEventWait, sql.Named("ns", b.ns), sql.Named("step_id", p.StepAttemptID)))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open the wait of step attempt %s for event %q: %w", p.StepAttemptID, p.EventName, err)
	}
	return out, nil
}

// deliverLookback delivers to the new wait p the oldest event of its name
// stored since sinceAt (and before the wait) whose match holds, reading at
// most backend.MaxLookbackEvents.
func (b *Backend) deliverLookback(ctx context.Context, tx *txn, now time.Time, p backend.OpenEventWaitParams, afterSeq int64, sinceAt time.Time) error {
	rows, err := tx.QueryContext(ctx, b.q.LookbackEvents, sql.Named("ns", b.ns), sql.Named("name", p.EventName),
		sql.Named("after_seq", afterSeq), sql.Named("since_at", timeArg(sinceAt)), sql.Named("limit", backend.MaxLookbackEvents))
	if err != nil {
		return err
	}
	var evs []*backend.EventRecord
	for rows.Next() {
		ev, err := scanEvent(rows)
		if err != nil {
			rows.Close()
			return err
		}
		evs = append(evs, ev)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, ev := range evs {
		ok, err := backend.MatchEvent(ctx, p.Matcher, p.Match, ev, p.Input)
		if err != nil {
			if _, err := tx.ExecContext(ctx, b.q.RecordEventWaitError, sql.Named("ns", b.ns), sql.Named("step_id", p.StepAttemptID),
				sql.Named("message", err.Error())); err != nil {
				return err
			}
			continue
		}
		if !ok {
			continue
		}
		_, err = queryStrings(ctx, tx, b.q.DeliverEventWait, sql.Named("ns", b.ns), sql.Named("step_id", p.StepAttemptID),
			sql.Named("event_id", ev.ID), sql.Named("event", string(backend.TriggeredRunInput(ev))), sql.Named("now", timeArg(now)))
		return err
	}
	return nil
}

// CloseEventWait implements [backend.EventWaiter].
func (b *Backend) CloseEventWait(ctx context.Context, stepAttemptID string) (*backend.EventWait, error) {
	var out *backend.EventWait
	err := b.write(ctx, func(tx *txn, now time.Time, _ *events) error {
		if _, err := tx.ExecContext(ctx, b.q.CloseEventWait, sql.Named("ns", b.ns), sql.Named("step_id", stepAttemptID),
			sql.Named("now", timeArg(now))); err != nil {
			return err
		}
		var err error
		out, err = scanEventWait(tx.QueryRowContext(ctx, b.q.GetEventWait, sql.Named("ns", b.ns), sql.Named("step_id", stepAttemptID)))
		if errors.Is(err, sql.ErrNoRows) {
			return backend.ErrEventWaitNotFound
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("close the event wait of step attempt %s: %w", stepAttemptID, err)
	}
	return out, nil
}

// ListEventWaits implements [backend.EventWaiter].
func (b *Backend) ListEventWaits(ctx context.Context, workflowRunID string) ([]backend.EventWait, error) {
	var ws []backend.EventWait
	err := b.read(ctx, func() error {
		ws = []backend.EventWait{}
		rows, err := b.reader().QueryContext(ctx, b.q.ListEventWaits, sql.Named("ns", b.ns), sql.Named("run_id", workflowRunID))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			w, err := scanEventWait(rows)
			if err != nil {
				return err
			}
			ws = append(ws, *w)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list the event waits of workflow run %s: %w", workflowRunID, err)
	}
	return ws, nil
}

// scanEventWait reads event_wait_columns.
func scanEventWait(s scanner) (*backend.EventWait, error) {
	var w backend.EventWait
	var indexPath, since, eventID, event, delivered, closed, lastErr sql.NullString
	var timeout, created string
	if err := s.Scan(&w.StepAttemptID, &w.WorkflowRunID, &w.StepName, &w.EventName, &w.Match, &indexPath,
		&since, &timeout, &created, &eventID, &event, &delivered, &closed, &lastErr); err != nil {
		return nil, err
	}
	str := func(n sql.NullString) *string {
		if !n.Valid {
			return nil
		}
		return &n.String
	}
	w.IndexPath, w.EventID, w.LastError = str(indexPath), str(eventID), str(lastErr)
	if event.Valid {
		w.Event = []byte(event.String)
	}
	var err error
	if w.TimeoutAt, err = backend.ParseTime(timeout); err != nil {
		return nil, fmt.Errorf("event wait %s: timeout_at: %w", w.StepAttemptID, err)
	}
	if w.CreatedAt, err = backend.ParseTime(created); err != nil {
		return nil, fmt.Errorf("event wait %s: created_at: %w", w.StepAttemptID, err)
	}
	for _, f := range []struct {
		dst **time.Time
		src sql.NullString
	}{{&w.SinceAt, since}, {&w.DeliveredAt, delivered}, {&w.ClosedAt, closed}} {
		if *f.dst, err = parseNullTime(f.src); err != nil {
			return nil, fmt.Errorf("event wait %s: %w", w.StepAttemptID, err)
		}
	}
	return &w, nil
}

// waitCandidate is an open wait an event may satisfy.
type waitCandidate struct {
	stepID, runID, workflow, match string
	input                          sql.NullString
}

// deliverEventToWaits is the wait part of deliverEvent, as the PostgreSQL
// backend's: find the open waits on ev's name that ev may satisfy (by
// index key, plus up to backend.MaxUnindexedWaitsPerPublish without one),
// evaluate their match with m, deliver ev to each that holds, wake its
// run, and record the effects.
func (b *Backend) deliverEventToWaits(ctx context.Context, tx *txn, now time.Time, evs *events, ev *backend.EventRecord, m backend.EventMatcher, log *effectLog) error {
	paths, err := queryStrings(ctx, tx, b.q.EventWaitPaths, sql.Named("ns", b.ns), sql.Named("name", ev.Name))
	if err != nil {
		return fmt.Errorf("read the index paths of waits on %q: %w", ev.Name, err)
	}
	var cands []waitCandidate
	collect := func(query string, args ...any) error {
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c waitCandidate
			if err := rows.Scan(&c.stepID, &c.runID, &c.workflow, &c.match, &c.input); err != nil {
				return err
			}
			cands = append(cands, c)
		}
		return rows.Err()
	}
	if len(paths) > 0 {
		xe, err := backend.ExprEvent(ev)
		if err != nil {
			return err
		}
		pathKeys, values := backend.EventWaitKeys(xe, paths)
		for i := range pathKeys {
			if err := collect(b.q.EventWaitCandidates, sql.Named("ns", b.ns), sql.Named("name", ev.Name),
				sql.Named("path", pathKeys[i]), sql.Named("value", values[i]), sql.Named("seq", ev.Seq)); err != nil {
				return fmt.Errorf("read the waits on %q: %w", ev.Name, err)
			}
		}
	}
	if err := collect(b.q.UnindexedEventWaits, sql.Named("ns", b.ns), sql.Named("name", ev.Name), sql.Named("seq", ev.Seq),
		sql.Named("limit", backend.MaxUnindexedWaitsPerPublish)); err != nil {
		return fmt.Errorf("read the waits on %q: %w", ev.Name, err)
	}
	slices.SortFunc(cands, func(a, b waitCandidate) int { return strings.Compare(a.stepID, b.stepID) })
	cands = slices.CompactFunc(cands, func(a, b waitCandidate) bool { return a.stepID == b.stepID })
	var event string
	for _, c := range cands {
		var input []byte
		if c.input.Valid {
			input = []byte(c.input.String)
		}
		ok, err := backend.MatchEvent(ctx, m, c.match, ev, input)
		if err != nil {
			msg := fmt.Sprintf("wait %s on %q, match %q: %v", c.stepID, ev.Name, c.match, err)
			log.add(ev.ID, backend.EventEffect{Kind: backend.EffectError, WorkflowName: c.workflow, WorkflowRunID: &c.runID, Message: &msg})
			if _, err := tx.ExecContext(ctx, b.q.RecordEventWaitError, sql.Named("ns", b.ns), sql.Named("step_id", c.stepID),
				sql.Named("message", msg)); err != nil {
				return err
			}
			continue
		}
		if !ok {
			continue
		}
		if event == "" {
			event = string(backend.TriggeredRunInput(ev))
		}
		runs, err := queryStrings(ctx, tx, b.q.DeliverEventWait, sql.Named("ns", b.ns), sql.Named("step_id", c.stepID),
			sql.Named("event_id", ev.ID), sql.Named("event", event), sql.Named("now", timeArg(now)))
		if err != nil {
			return fmt.Errorf("deliver event %s to wait %s: %w", ev.ID, c.stepID, err)
		}
		if len(runs) == 0 {
			continue // delivered or timed out meanwhile
		}
		woken, err := queryStrings(ctx, tx, b.q.WakeRun, sql.Named("ns", b.ns), sql.Named("run_id", runs[0]), sql.Named("now", timeArg(now)))
		if err != nil {
			return fmt.Errorf("wake workflow run %s: %w", runs[0], err)
		}
		if len(woken) > 0 {
			evs.workAvailable(b.ns)
		}
		runID := runs[0]
		log.add(ev.ID, backend.EventEffect{Kind: backend.EffectWoke, WorkflowName: c.workflow, WorkflowRunID: &runID})
	}
	return nil
}
