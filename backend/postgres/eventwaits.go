package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
)

var _ backend.EventWaiter = (*Backend)(nil)

// OpenEventWait implements [backend.EventWaiter] (sql/eventwaits.sql):
// without a look-back, by one statement (open_event_wait: store the wait
// unless stored, and return it), which is one round trip on the woken
// run's path; with one, in a READ COMMITTED transaction that stores the
// wait and, for a new wait, delivers it the oldest stored matching event
// of its window.
func (b *Backend) OpenEventWait(ctx context.Context, p backend.OpenEventWaitParams) (*backend.EventWait, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var input *string
	if len(p.Input) > 0 {
		s := string(p.Input)
		input = &s
	}
	if p.Lookback <= 0 {
		w, err := scanEventWait(b.pool.QueryRow(ctx, b.q.OpenEventWait, b.namespace, p.StepAttemptID, p.WorkflowRunID, p.WorkflowName,
			p.StepName, p.EventName, p.Match, input, p.IndexPath, p.IndexValue, ms(p.TimeoutAt), b.at()))
		if err != nil {
			return nil, fmt.Errorf("open the wait of step attempt %s for event %q: %w", p.StepAttemptID, p.EventName, err)
		}
		return w, nil
	}
	var out *backend.EventWait
	err := b.inTx(ctx, func(tx pgx.Tx) error {
		var lookback *int64
		if p.Lookback > 0 {
			ms := p.Lookback.Milliseconds()
			lookback = &ms
		}
		var afterSeq int64
		var sinceAt *time.Time
		err := tx.QueryRow(ctx, b.q.InsertEventWait, b.namespace, p.StepAttemptID, p.WorkflowRunID, p.WorkflowName,
			p.StepName, p.EventName, p.Match, input, p.IndexPath, p.IndexValue, lookback, ms(p.TimeoutAt), b.at()).
			Scan(&afterSeq, &sinceAt)
		switch {
		case errors.Is(err, pgx.ErrNoRows): // stored before: a replay
		case err != nil:
			return err
		case sinceAt != nil:
			if err := b.deliverLookback(ctx, tx, p, afterSeq, *sinceAt); err != nil {
				return err
			}
		}
		out, err = scanEventWait(tx.QueryRow(ctx, b.q.GetEventWait, b.namespace, p.StepAttemptID))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open the wait of step attempt %s for event %q: %w", p.StepAttemptID, p.EventName, err)
	}
	return out, nil
}

// deliverLookback delivers to the new wait p the oldest event of its name
// stored since sinceAt (and before the wait, seq <= afterSeq) whose match
// holds, reading at most backend.MaxLookbackEvents.
func (b *Backend) deliverLookback(ctx context.Context, tx pgx.Tx, p backend.OpenEventWaitParams, afterSeq int64, sinceAt time.Time) error {
	rows, err := tx.Query(ctx, b.q.LookbackEvents, b.namespace, p.EventName, afterSeq, sinceAt, backend.MaxLookbackEvents)
	if err != nil {
		return err
	}
	evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*backend.EventRecord, error) { return scanEvent(r) })
	if err != nil {
		return err
	}
	for _, ev := range evs {
		ok, err := backend.MatchEvent(ctx, p.Matcher, p.Match, ev, p.Input)
		if err != nil {
			msg := err.Error()
			if _, err := tx.Exec(ctx, b.q.RecordEventWaitError, b.namespace, p.StepAttemptID, msg); err != nil {
				return err
			}
			continue
		}
		if !ok {
			continue
		}
		_, err = tx.Exec(ctx, b.q.DeliverEventWait, b.namespace, p.StepAttemptID, ev.ID, string(backend.TriggeredRunInput(ev)), b.at())
		return err
	}
	return nil
}

// CloseEventWait implements [backend.EventWaiter].
func (b *Backend) CloseEventWait(ctx context.Context, stepAttemptID string) (*backend.EventWait, error) {
	var out *backend.EventWait
	err := b.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, b.q.CloseEventWait, b.namespace, stepAttemptID, b.at()); err != nil {
			return err
		}
		var err error
		out, err = scanEventWait(tx.QueryRow(ctx, b.q.GetEventWait, b.namespace, stepAttemptID))
		if errors.Is(err, pgx.ErrNoRows) {
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
	rows, err := b.pool.Query(ctx, b.q.ListEventWaits, b.namespace, workflowRunID)
	if err != nil {
		return nil, fmt.Errorf("list the event waits of workflow run %s: %w", workflowRunID, err)
	}
	ws, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (backend.EventWait, error) {
		w, err := scanEventWait(r)
		if err != nil {
			return backend.EventWait{}, err
		}
		return *w, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the event waits of workflow run %s: %w", workflowRunID, err)
	}
	if ws == nil {
		ws = []backend.EventWait{}
	}
	return ws, nil
}

// scanEventWait reads event_wait_columns.
func scanEventWait(row pgx.Row) (*backend.EventWait, error) {
	var w backend.EventWait
	var event *string
	if err := row.Scan(&w.StepAttemptID, &w.WorkflowRunID, &w.StepName, &w.EventName, &w.Match, &w.IndexPath,
		&w.SinceAt, &w.TimeoutAt, &w.CreatedAt, &w.EventID, &event, &w.DeliveredAt, &w.ClosedAt, &w.LastError); err != nil {
		return nil, err
	}
	if event != nil {
		w.Event = []byte(*event)
	}
	w.TimeoutAt, w.CreatedAt = w.TimeoutAt.UTC(), w.CreatedAt.UTC()
	for _, t := range []*time.Time{w.SinceAt, w.DeliveredAt, w.ClosedAt} {
		if t != nil {
			*t = t.UTC()
		}
	}
	return &w, nil
}

// waitCandidate is an open wait an event may satisfy.
type waitCandidate struct {
	stepID, runID, workflow, match string
	input                          *string
}

// deliverEventToWaits is the wait part of deliverEvent: in the publish's
// transaction, find the open waits on ev's name that ev may satisfy — by
// index key (event_wait_paths, then event_wait_candidates per path), plus
// up to backend.MaxUnindexedWaitsPerPublish without one — evaluate their
// match with m, deliver ev to each that holds and is still open, wake its
// run, and record the effects (woke, or the evaluation error).
func (b *Backend) deliverEventToWaits(ctx context.Context, tx pgx.Tx, ev *backend.EventRecord, m backend.EventMatcher, log *effectLog) error {
	rows, err := tx.Query(ctx, b.q.EventWaitPaths, b.namespace, ev.Name)
	if err != nil {
		return fmt.Errorf("read the index paths of waits on %q: %w", ev.Name, err)
	}
	paths, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("read the index paths of waits on %q: %w", ev.Name, err)
	}
	var cands []waitCandidate
	collect := func(rows pgx.Rows, err error) error {
		if err != nil {
			return err
		}
		var c waitCandidate
		_, err = pgx.ForEachRow(rows, []any{&c.stepID, &c.runID, &c.workflow, &c.match, &c.input}, func() error {
			cands = append(cands, c)
			return nil
		})
		return err
	}
	if len(paths) > 0 {
		xe, err := backend.ExprEvent(ev)
		if err != nil {
			return err
		}
		pathKeys, values := backend.EventWaitKeys(xe, paths)
		for i := range pathKeys {
			if err := collect(tx.Query(ctx, b.q.EventWaitCandidates, b.namespace, ev.Name, pathKeys[i], values[i], ev.Seq)); err != nil {
				return fmt.Errorf("read the waits on %q: %w", ev.Name, err)
			}
		}
	}
	if err := collect(tx.Query(ctx, b.q.UnindexedEventWaits, b.namespace, ev.Name, ev.Seq, backend.MaxUnindexedWaitsPerPublish)); err != nil {
		return fmt.Errorf("read the waits on %q: %w", ev.Name, err)
	}
	slices.SortFunc(cands, func(a, b waitCandidate) int { return strings.Compare(a.stepID, b.stepID) })
	cands = slices.CompactFunc(cands, func(a, b waitCandidate) bool { return a.stepID == b.stepID })
	var matched []waitCandidate
	for _, c := range cands {
		var input []byte
		if c.input != nil {
			input = []byte(*c.input)
		}
		ok, err := backend.MatchEvent(ctx, m, c.match, ev, input)
		if err != nil {
			msg := fmt.Sprintf("wait %s on %q, match %q: %v", c.stepID, ev.Name, c.match, err)
			log.add(ev.ID, backend.EventEffect{Kind: backend.EffectError, WorkflowName: c.workflow, WorkflowRunID: &c.runID, Message: &msg})
			if _, err := tx.Exec(ctx, b.q.RecordEventWaitError, b.namespace, c.stepID, msg); err != nil {
				return err
			}
			continue
		}
		if ok {
			matched = append(matched, c)
		}
	}
	if len(matched) == 0 {
		return nil
	}
	// Lock the runs, then deliver in (run, step) order: the order every
	// publisher takes locks in.
	slices.SortFunc(matched, func(a, b waitCandidate) int {
		return cmp.Or(strings.Compare(a.runID, b.runID), strings.Compare(a.stepID, b.stepID))
	})
	runIDs := make([]string, 0, len(matched))
	for _, c := range matched {
		if len(runIDs) == 0 || runIDs[len(runIDs)-1] != c.runID {
			runIDs = append(runIDs, c.runID)
		}
	}
	if _, err := tx.Exec(ctx, b.q.LockEventWaiterRuns, b.namespace, runIDs); err != nil {
		return fmt.Errorf("lock the runs waiting for event %s: %w", ev.ID, err)
	}
	event := string(backend.TriggeredRunInput(ev))
	for _, c := range matched {
		var runID string
		err := tx.QueryRow(ctx, b.q.DeliverEventWait, b.namespace, c.stepID, ev.ID, event, b.at()).Scan(&runID)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // delivered or timed out meanwhile
		}
		if err != nil {
			return fmt.Errorf("deliver event %s to wait %s: %w", ev.ID, c.stepID, err)
		}
		if _, err := tx.Exec(ctx, b.q.WakeEventWaiter, b.namespace, runID, b.at()); err != nil {
			return fmt.Errorf("wake workflow run %s: %w", runID, err)
		}
		log.add(ev.ID, backend.EventEffect{Kind: backend.EffectWoke, WorkflowName: c.workflow, WorkflowRunID: &runID})
	}
	return nil
}
