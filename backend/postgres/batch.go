package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/openworkflow-go/openworkflow/backend"
)

var _ backend.Batcher = (*Backend)(nil)

// batchItem is one write of a batch, ready to queue.
type batchItem struct {
	i      int // index in the caller's slice
	w      backend.Write
	sql    string
	args   []any
	parent bool // the statement returns the run's parent link
}

// batchResult is what one statement of a committed batch said.
type batchResult struct {
	applied            bool
	parentNS, parentID *string
	err                error // the write's own error, when retried alone
}

// ApplyWrites implements [backend.Batcher]. The writes are sent as one
// pgx.Batch: a pipeline of statements (the writes of one kind from many
// runs as one multi-row statement where planStatements can keep every
// outcome, else one per write), executed by PostgreSQL as one implicit
// transaction, so a batch costs one round trip and one commit. Each write
// keeps its single twin's fence (status running, worker_id =
// Write.WorkerID; step writes lock the run row FOR NO KEY UPDATE), and a
// statement returns a row only for the writes it applied; a refused write
// is explained afterwards (ErrNotOwner, ErrRunNotFound, ErrStepNotRunning,
// naming the write kind and run) while the others commit. The batch's
// notifications follow in a transaction of their own (announce).
//
// Invalid writes (bad JSON, missing step, unknown kind) fail with
// [backend.ErrInvalidArgument] before anything is sent. When a statement
// fails in the database (a duplicate id, a deadlock), the transaction
// aborts as a whole; each write is then retried alone, so only the bad one
// reports an error. After the commit, parked runs are reconciled and
// parents of finished child runs woken, in one more pipelined round trip,
// only when some write needs it.
func (b *Backend) ApplyWrites(ctx context.Context, writes []backend.Write) []error {
	errs := make([]error, len(writes))
	if err := ctx.Err(); err != nil {
		for i, w := range writes {
			errs[i] = writeError(w, err)
		}
		return errs
	}
	items := make([]batchItem, 0, len(writes))
	for i, w := range writes {
		it, err := b.prepareWrite(w)
		if err != nil {
			errs[i] = writeError(w, err)
			continue
		}
		it.i = i
		items = append(items, it)
	}
	if len(items) == 0 {
		return errs
	}

	results, err := b.sendWrites(ctx, items)
	if err != nil {
		var pgErr *pgconn.PgError
		if ctx.Err() != nil || !errors.As(err, &pgErr) || len(items) == 1 {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			for _, it := range items {
				errs[it.i] = writeError(it.w, err)
			}
			return errs
		}
		// One statement aborted the transaction: find it by applying each
		// write alone.
		results = make([]batchResult, len(items))
		for k := range items {
			r, err := b.sendWrites(ctx, items[k:k+1])
			if err != nil {
				results[k].err = err
				continue
			}
			results[k] = r[0]
		}
	}

	// Explanations and follow-ups run even if ctx ended after the commit:
	// the writes applied, and a missed wake-up would strand a parent.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wakeTimeout)
	defer cancel()
	for k, it := range items {
		r := results[k]
		switch {
		case r.err != nil:
			errs[it.i] = writeError(it.w, r.err)
		case !r.applied:
			errs[it.i] = b.refusedError(wctx, it.w)
		}
	}
	b.followUp(wctx, items, results, errs)
	b.announce(wctx, items, results)
	return errs
}

// writeError names the write's kind and run.
func writeError(w backend.Write, err error) error {
	return fmt.Errorf("%s of workflow run %s: %w", w.Kind, w.WorkflowRunID, err)
}

// refusedError explains a write whose fence matched no row, as its single
// twin would.
func (b *Backend) refusedError(ctx context.Context, w backend.Write) error {
	if w.Kind == backend.WriteFinishStep {
		return b.stepFenceError(ctx, w.Kind.String(), w.WorkflowRunID, w.Step.ID, w.WorkerID)
	}
	return b.fenceError(ctx, w.Kind.String(), w.WorkflowRunID, w.WorkerID)
}

// prepareWrite validates a write and picks its statement and arguments.
func (b *Backend) prepareWrite(w backend.Write) (batchItem, error) {
	it := batchItem{w: w}
	base := []any{b.namespace, w.WorkflowRunID, w.WorkerID}
	switch w.Kind {
	case backend.WriteInsertStep:
		s := w.Step
		if s == nil || s.ID == "" || s.StepName == "" || s.Kind == "" {
			return it, fmt.Errorf("%w: the step attempt needs an id, a name and a kind", backend.ErrInvalidArgument)
		}
		status := s.Status.Normalize()
		if status == "" {
			status = backend.StepRunning
		}
		if status != backend.StepRunning && status != backend.StepCompleted && status != backend.StepFailed {
			return it, fmt.Errorf("%w: step attempt %s has status %q", backend.ErrInvalidArgument, s.ID, s.Status)
		}
		if err := checkJSONs("step attempt "+s.ID, s.Config, s.Context, s.Output, s.Error); err != nil {
			return it, err
		}
		output := jsonArg(s.Output)
		if status == backend.StepCompleted {
			output = jsonOr(s.Output, "null") // as CompleteStepAttempt
		}
		it.sql = b.q.batchInsertStep
		it.args = append(base, s.ID, s.StepName, string(s.Kind), string(status),
			jsonOr(s.Config, "{}"), jsonArg(s.Context), output, jsonArg(s.Error),
			s.ChildWorkflowRunNamespaceID, s.ChildWorkflowRunID, msPtr(s.StartedAt), msPtr(s.FinishedAt))
	case backend.WriteFinishStep:
		s := w.Step
		if s == nil || s.ID == "" {
			return it, fmt.Errorf("%w: no step attempt id", backend.ErrInvalidArgument)
		}
		if err := checkJSONs("step attempt "+s.ID, s.Output, s.Error); err != nil {
			return it, err
		}
		switch s.Status.Normalize() {
		case backend.StepCompleted:
			it.sql, it.args = b.q.completeStep, append(base, s.ID, jsonOr(s.Output, "null"))
		case backend.StepFailed:
			it.sql, it.args = b.q.failStep, append(base, s.ID, jsonArg(s.Error))
		default:
			return it, fmt.Errorf("%w: step attempt %s cannot finish as %q", backend.ErrInvalidArgument, s.ID, s.Status)
		}
	case backend.WriteCompleteRun:
		if err := checkJSON("output", w.Output); err != nil {
			return it, err
		}
		it.sql, it.args, it.parent = b.q.batchCompleteRun, append(base, jsonOr(w.Output, "null")), true
	case backend.WriteParkRun:
		it.sql, it.args = b.q.batchParkRun, append(base, ms(w.AvailableAt))
	case backend.WriteRescheduleRun:
		if err := checkJSON("error", w.Error); err != nil {
			return it, err
		}
		it.sql, it.args = b.q.batchRescheduleRun, append(base, ms(w.AvailableAt), jsonArg(w.Error))
	case backend.WriteFailRun:
		if err := checkJSON("error", w.Error); err != nil {
			return it, err
		}
		it.sql, it.args, it.parent = b.q.batchFailRun, append(base, jsonArg(w.Error)), true
	default:
		return it, fmt.Errorf("%w: unknown write kind %d", backend.ErrInvalidArgument, int(w.Kind))
	}
	return it, nil
}

// checkJSONs is checkJSON for several values of one record.
func checkJSONs(what string, raws ...[]byte) error {
	for _, raw := range raws {
		if err := checkJSON(what+" JSON", raw); err != nil {
			return err
		}
	}
	return nil
}

// isRunWrite reports whether the write changes the run row (and so may
// need announcing).
func isRunWrite(k backend.WriteKind) bool {
	return k != backend.WriteInsertStep && k != backend.WriteFinishStep
}

// sendWrites sends items as one pipelined implicit transaction and reads
// what each statement did. Any error means nothing committed (or, for a
// connection lost at the commit, that the outcome is unknown). The batch's
// notifications are sent after the commit (see announce).
func (b *Backend) sendWrites(ctx context.Context, items []batchItem) ([]batchResult, error) {
	stmts := b.planStatements(items)
	batch := &pgx.Batch{}
	for _, st := range stmts {
		batch.Queue(st.sql, st.args...)
	}
	br := b.pool.SendBatch(ctx, batch)
	results := make([]batchResult, len(items))
	for _, st := range stmts {
		var err error
		if st.combined {
			err = readCombined(br, items, st, results)
		} else {
			err = readWrite(br, items[st.ks[0]], &results[st.ks[0]])
		}
		if err != nil {
			_ = br.Close()
			return nil, err
		}
	}
	if err := br.Close(); err != nil { // the commit
		return nil, err
	}
	return results, nil
}

// statement is one statement of a sent batch: the write at items[ks[0]],
// or (combined) the writes at positions ks as one multi-row statement that
// returns the id of each row it changed and, for run completions, the
// run's parent link.
type statement struct {
	ks       []int
	combined bool
	parent   bool
	sql      string
	args     []any
}

// planStatements orders the batch's statements. Step inserts, step
// completions, run completions and parks of many runs each go as one
// multi-row statement (a group commit of 100 runs' fast steps costs a few
// statements, not 300 executions), where moving them keeps every write's
// outcome:
//   - the inserts go at the place of the first insert; an insert that a
//     transition of its own run precedes in the batch must be refused (the
//     run no longer runs), so it stays a statement of its own, in place,
//     as does one of a step attempt an earlier write of the batch touched;
//   - the step completions go at the place of the first one; one that a
//     transition of its run precedes stays in place, as does one of a step
//     inserted or finished again in the same batch;
//   - the run completions and the parks each go at the place of the last
//     one; a transition that some later write of its run follows (which
//     it must refuse) stays a statement of its own, in place.
//
// A kind with fewer than two combinable writes keeps its single statements.
func (b *Backend) planStatements(items []batchItem) []statement {
	transitioned := make(map[string]bool)
	lastWrite := make(map[string]int)  // run id → position of its last write
	stepWrites := make(map[string]int) // step attempt id → writes of it
	for k, it := range items {
		lastWrite[it.w.WorkflowRunID] = k
		if it.w.Step != nil {
			stepWrites[it.w.Step.ID]++
		}
	}
	groups := map[backend.WriteKind][]int{}
	stepSeen := make(map[string]bool) // step attempt ids written before position k
	for k, it := range items {
		run := it.w.WorkflowRunID
		switch kind := it.w.Kind; {
		case kind == backend.WriteInsertStep && !transitioned[run] && !stepSeen[it.w.Step.ID]:
			groups[kind] = append(groups[kind], k)
		case kind == backend.WriteFinishStep && it.sql == b.q.completeStep && !transitioned[run] && stepWrites[it.w.Step.ID] == 1:
			groups[kind] = append(groups[kind], k)
		case (kind == backend.WriteCompleteRun || kind == backend.WriteParkRun) && lastWrite[run] == k:
			groups[kind] = append(groups[kind], k)
		}
		if isRunWrite(it.w.Kind) {
			transitioned[run] = true
		}
		if it.w.Step != nil {
			stepSeen[it.w.Step.ID] = true
		}
	}
	at := make(map[int]statement) // combined statements by the position they take
	skip := make(map[int]bool)    // positions sent inside a combined statement
	for kind, ks := range groups {
		if len(ks) < 2 {
			continue
		}
		st := statement{ks: ks, combined: true}
		pos := ks[len(ks)-1]
		switch kind {
		case backend.WriteInsertStep:
			st.sql, st.args, pos = b.q.batchInsertSteps, insertStepsArgs(b.namespace, items, ks), ks[0]
		case backend.WriteFinishStep:
			st.sql, st.args, pos = b.q.batchCompleteSteps, completeStepsArgs(b.namespace, items, ks), ks[0]
		case backend.WriteCompleteRun:
			st.sql, st.args, st.parent = b.q.batchCompleteRuns, completeRunsArgs(b.namespace, items, ks), true
		case backend.WriteParkRun:
			st.sql, st.args = b.q.batchParkRuns, parkRunsArgs(b.namespace, items, ks)
		}
		at[pos] = st
		for _, k := range ks {
			skip[k] = true
		}
	}
	stmts := make([]statement, 0, len(items))
	for k, it := range items {
		if st, ok := at[k]; ok {
			stmts = append(stmts, st)
		} else if !skip[k] {
			stmts = append(stmts, statement{ks: []int{k}, parent: it.parent, sql: it.sql, args: it.args})
		}
	}
	return stmts
}

// completeRunsArgs lays out the run completions at positions ks (single
// arguments: namespace, run id, worker id, output JSON) as
// sqlBatchCompleteRuns's column arrays.
func completeRunsArgs(namespace string, items []batchItem, ks []int) []any {
	ids, workers := runsAndWorkers(items, ks)
	outputs := make([]string, len(ks))
	for i, k := range ks {
		outputs[i], _ = items[k].args[3].(string) // jsonOr: never nil
	}
	return []any{namespace, ids, workers, outputs}
}

// parkRunsArgs lays out the parks at positions ks as sqlBatchParkRuns's
// column arrays; the wake-up times come from the writes.
func parkRunsArgs(namespace string, items []batchItem, ks []int) []any {
	ids, workers := runsAndWorkers(items, ks)
	at := make([]time.Time, len(ks))
	for i, k := range ks {
		at[i] = ms(items[k].w.AvailableAt)
	}
	return []any{namespace, ids, workers, at}
}

// runsAndWorkers are the run ids and worker ids of the writes at ks.
func runsAndWorkers(items []batchItem, ks []int) (ids, workers []string) {
	ids, workers = make([]string, len(ks)), make([]string, len(ks))
	for i, k := range ks {
		ids[i], workers[i] = items[k].w.WorkflowRunID, items[k].w.WorkerID
	}
	return ids, workers
}

// completeStepsArgs lays out the step completions at positions ks as
// sqlBatchCompleteSteps's column arrays.
func completeStepsArgs(namespace string, items []batchItem, ks []int) []any {
	runs, workers := runsAndWorkers(items, ks)
	ids := make([]string, len(ks))
	outputs := make([]string, len(ks))
	for i, k := range ks {
		ids[i] = items[k].w.Step.ID
		outputs[i], _ = items[k].args[4].(string) // the single statement's $5
	}
	return []any{namespace, runs, workers, ids, outputs}
}

// insertStepsArgs lays the single-insert arguments of the items at
// positions ks out as sqlBatchInsertSteps's column arrays.
func insertStepsArgs(namespace string, items []batchItem, ks []int) []any {
	cols := make([][]any, 14)
	for _, k := range ks {
		for c := range cols {
			cols[c] = append(cols[c], items[k].args[c+1]) // args[0] is the namespace
		}
	}
	text := func(c int) []*string {
		out := make([]*string, len(ks))
		for i, v := range cols[c] {
			switch v := v.(type) {
			case string:
				out[i] = &v
			case *string:
				out[i] = v
			}
		}
		return out
	}
	times := func(c int) []*time.Time {
		out := make([]*time.Time, len(ks))
		for i, v := range cols[c] {
			out[i], _ = v.(*time.Time)
		}
		return out
	}
	args := []any{namespace}
	for c := 0; c < 12; c++ {
		args = append(args, text(c))
	}
	return append(args, times(12), times(13))
}

// readCombined reads what a combined statement returned: a row per write
// that applied (its step attempt id for step writes, its run id for
// transitions, with the parent link for completions); the others were
// refused by their fence.
func readCombined(br pgx.BatchResults, items []batchItem, st statement, results []batchResult) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	type landed struct{ parentNS, parentID *string }
	got := make(map[string]landed, len(st.ks))
	for rows.Next() {
		var id string
		var l landed
		if st.parent {
			err = rows.Scan(&id, &l.parentNS, &l.parentID)
		} else {
			err = rows.Scan(&id)
		}
		if err != nil {
			rows.Close()
			return err
		}
		got[id] = l
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, k := range st.ks {
		key := items[k].w.WorkflowRunID
		if items[k].w.Step != nil {
			key = items[k].w.Step.ID
		}
		if l, ok := got[key]; ok {
			results[k] = batchResult{applied: true, parentNS: l.parentNS, parentID: l.parentID}
		}
	}
	return nil
}

// announce sends the batch's notifications — the runs that finished, and
// whether some run became claimable now — in a transaction of their own,
// committed asynchronously. A NOTIFY takes a database-wide lock from its
// commit until the commit's WAL flush; inside the write transaction it
// made concurrent group commits wait for each other's flushes. The
// notifications are hints (subscribers also poll), so losing them in a
// crash is harmless.
func (b *Backend) announce(ctx context.Context, items []batchItem, results []batchResult) {
	var finished []string
	work := false
	now := time.Now()
	for k, it := range items {
		// A write followUp reports an error on (a parent not woken) did
		// apply: it is announced like the others.
		if !results[k].applied || results[k].err != nil {
			continue
		}
		switch it.w.Kind {
		case backend.WriteCompleteRun, backend.WriteFailRun:
			finished = append(finished, it.w.WorkflowRunID)
		case backend.WriteParkRun, backend.WriteRescheduleRun:
			if !it.w.AvailableAt.After(now) {
				work = true
			}
		}
	}
	if len(finished) == 0 && !work {
		return
	}
	batch := &pgx.Batch{}
	batch.Queue(sqlAsyncCommit)
	for len(finished) > 0 {
		n := min(len(finished), notifyChunk)
		payload, _ := json.Marshal(notification{Schema: b.schema, Namespace: b.namespace, Kind: string(backend.EventRunFinished), IDs: finished[:n]})
		batch.Queue(sqlNotify, string(payload))
		finished = finished[n:]
	}
	if work {
		payload, _ := json.Marshal(notification{Schema: b.schema, Namespace: b.namespace, Kind: string(backend.EventWorkAvailable)})
		batch.Queue(sqlNotify, string(payload))
	}
	_ = b.pool.SendBatch(ctx, batch).Close() // hints: a failure only delays a subscriber to its next poll
}

// notifyChunk is how many run ids one notification carries, well under
// PostgreSQL's 8,000-byte payload limit.
const notifyChunk = 200

// readWrite reads one statement's rows: a row means the write applied.
func readWrite(br pgx.BatchResults, it batchItem, r *batchResult) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	for rows.Next() {
		r.applied = true
		if it.parent {
			if err := rows.Scan(&r.parentNS, &r.parentID); err != nil {
				rows.Close()
				return err
			}
		}
	}
	rows.Close()
	return rows.Err()
}

// followUp runs, after the commit, what the single writes do after theirs:
// the reconciliation of parked runs (sqlReconcileParkedRuns, one
// statement for all) and the wake-up of the parent of every child run that
// finished (sqlWakeParent, only for runs that have a parent), pipelined in
// one round trip. A failure is reported on the writes concerned, which did
// apply, as their single twins report it.
func (b *Backend) followUp(ctx context.Context, items []batchItem, results []batchResult, errs []error) {
	var parked []string
	var parkK, wakeK []int // positions in items
	batch := &pgx.Batch{}
	for k, it := range items {
		r := results[k]
		if !r.applied || r.err != nil {
			continue
		}
		switch {
		case it.w.Kind == backend.WriteParkRun:
			parked = append(parked, it.w.WorkflowRunID)
			parkK = append(parkK, k)
		case it.parent && r.parentNS != nil && r.parentID != nil:
			batch.Queue(b.q.wakeParent, *r.parentNS, *r.parentID, b.namespace, it.w.WorkflowRunID)
			wakeK = append(wakeK, k)
		}
	}
	if len(parked) > 0 {
		batch.Queue(b.q.reconcileParkedRuns, b.namespace, parked)
	}
	if batch.Len() == 0 {
		return
	}
	if err := b.pool.SendBatch(ctx, batch).Close(); err != nil {
		for _, k := range wakeK {
			errs[items[k].i] = fmt.Errorf("workflow run %s finished but its parent could not be woken: %w", items[k].w.WorkflowRunID, err)
		}
		for _, k := range parkK {
			errs[items[k].i] = fmt.Errorf("park workflow run %s: reconcile wake-ups: %w", items[k].w.WorkflowRunID, err)
		}
	}
}
