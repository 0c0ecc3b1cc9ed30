package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/openworkflow-go/openworkflow/backend"
)

// batchItem is one write of a batch, ready to queue.
type batchItem struct {
	g      int // index of the write's group in the caller's slice
	w      backend.Write
	sql    string
	args   []any
	parent bool // the statement returns the run's parent link
}

// batchResult is what one statement of a committed batch said.
type batchResult struct {
	applied            bool
	parentNS, parentID *string
	// What a completion or failure left: status, output and error as
	// stored.
	status        string
	output, error []byte
}

// ApplyWrites implements [backend.Batcher]. The writes of every group are
// sent as one pgx.Batch: a pipeline of statements (the writes of one kind
// from many runs as one multi-row statement where planStatements can keep
// every outcome, else one per write), executed by PostgreSQL as one
// implicit transaction, so a batch costs one round trip and one commit.
// Each write keeps its fence (status running, worker_id = Write.WorkerID;
// step writes lock the run row FOR NO KEY UPDATE, transitions update it),
// and a statement returns a row only for the writes it applied; a refused
// group is explained afterwards (ErrNotOwner, ErrRunNotFound,
// ErrStepNotRunning, naming the write kind and run) while the others
// commit. Since a group's first write locks its run row until the commit,
// and only its last write may change the run's status, a group's fence
// gives the same answer for all its writes: it applies whole or not at
// all. The batch's notifications follow in a transaction of their own
// (announce), except a lone group's finished notification, which its own
// transaction carries (inlineFinished).
//
// Groups of the wrong shape (see [backend.ValidateGroup]) and writes with
// invalid arguments or values (see [backend.ValidateJSON]) fail with
// [backend.ErrInvalidArgument] before anything is sent. When a statement
// fails in the database (a duplicate id, a value refused), the transaction
// aborts as a whole; each group is then sent again alone, in a
// transaction of its own, so only the group holding the bad write fails,
// and it fails whole; a data exception (SQLSTATE class 22 or 54) is
// reported as [backend.ErrInvalidArgument]. After the commit, parked runs
// are reconciled and parents of finished child runs woken, in one more
// pipelined round trip, only when some write needs it.
func (b *Backend) ApplyWrites(ctx context.Context, groups [][]backend.Write) []error {
	errs := make([]error, len(groups))
	if err := ctx.Err(); err != nil {
		for g := range groups {
			errs[g] = groupError(groups[g], err)
		}
		return errs
	}
	items := make([]batchItem, 0, len(groups)*2)
	for g, ws := range groups {
		its, err := b.prepareGroup(g, ws)
		if err != nil {
			errs[g] = err
			continue
		}
		items = append(items, its...)
	}
	if len(items) == 0 {
		return errs
	}

	// A lone group that ends its run (an idle worker's last step) carries
	// its finished notification inside its own transaction: one commit
	// instead of two. Under load, when groups share a commit, the
	// notifications follow in a transaction of their own (announce),
	// since a NOTIFY holds a database-wide lock through the commit's
	// flush and would serialize the concurrent group commits.
	inline := b.inlineFinished(groups)
	results, err := b.sendWrites(ctx, items, inline)
	if err != nil {
		var pgErr *pgconn.PgError
		if ctx.Err() != nil || !errors.As(err, &pgErr) || items[0].g == items[len(items)-1].g || connectionLost(pgErr.Code) {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			for _, span := range groupSpans(items) {
				errs[span.g] = groupError(groups[span.g], classifyWriteError(err))
			}
			return errs
		}
		// One statement aborted the transaction: send each group alone, so
		// that only the group holding the bad write fails.
		results = make([]batchResult, len(items))
		for _, span := range groupSpans(items) {
			r, err := b.sendWrites(ctx, items[span.from:span.to], "")
			if err != nil {
				errs[span.g] = groupError(groups[span.g], classifyWriteError(err))
				continue
			}
			copy(results[span.from:span.to], r)
		}
	}

	// Explanations and follow-ups run even if ctx ended after the commit:
	// the writes applied, and a missed wake-up would strand a parent.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wakeTimeout)
	defer cancel()
	for _, span := range groupSpans(items) {
		if errs[span.g] != nil {
			for k := span.from; k < span.to; k++ {
				results[k].applied = false // not sent alone: nothing of it applied
			}
			continue
		}
		errs[span.g] = b.groupRefusal(wctx, items[span.from:span.to], results[span.from:span.to])
	}
	b.publishFinished(items, results)
	b.countWritten(items, results)
	b.followUp(wctx, items, results, errs)
	if err != nil { // sent again group by group: nothing was announced inline
		inline = ""
	}
	b.announce(wctx, items, results, inline)
	return errs
}

// countWritten counts the rows the applied writes changed toward the
// tables' first ANALYZE (statistics.go): a step write changes a step
// attempt, a transition its run.
func (b *Backend) countWritten(items []batchItem, results []batchResult) {
	if b.stats.settled() {
		return // both tables tried: nothing left to count
	}
	var runs, steps int
	for k, it := range items {
		switch {
		case !results[k].applied:
		case isRunWrite(it.w.Kind):
			runs++
		default:
			steps++
		}
	}
	b.stats.wrote(runsTable, runs)
	b.stats.wrote(stepsTable, steps)
}

// inlineFinished is the run whose finished notification ApplyWrites sends
// inside the batch's transaction: that of the only group, when it
// completes or fails its run; "" for none.
func (b *Backend) inlineFinished(groups [][]backend.Write) string {
	if len(groups) != 1 {
		return ""
	}
	for _, w := range groups[0] {
		if w.Kind == backend.WriteCompleteRun || w.Kind == backend.WriteFailRun {
			return w.WorkflowRunID
		}
	}
	return ""
}

// publishFinished hands the runs the batch completed or failed, with how
// they ended, to this backend's own subscribers at once (an in-process
// Result returns without waiting for the announcement's NOTIFY and
// without reading the run). The NOTIFY still follows, for the other
// processes; this process then sees the run finish twice, which every
// subscriber allows (events are hints).
func (b *Backend) publishFinished(items []batchItem, results []batchResult) {
	for k, it := range items {
		r := results[k]
		if !r.applied || (it.w.Kind != backend.WriteCompleteRun && it.w.Kind != backend.WriteFailRun) {
			continue
		}
		var f *backend.FinishedRun
		if !mayBeEscaped(r.output) && !mayBeEscaped(r.error) {
			// An escaped value is decoded by a read (escapes.go): leave
			// those runs to be read.
			f = &backend.FinishedRun{Status: backend.RunStatus(r.status), Output: r.output, Error: r.error}
		}
		b.hub.Publish(backend.Event{Kind: backend.EventRunFinished, WorkflowRunID: it.w.WorkflowRunID, Finished: f})
	}
}

// groupSpan is the items [from, to) of group g.
type groupSpan struct{ g, from, to int }

// groupSpans cuts items, laid out group by group, into their groups.
func groupSpans(items []batchItem) []groupSpan {
	var spans []groupSpan
	for k := 0; k < len(items); {
		end := k + 1
		for end < len(items) && items[end].g == items[k].g {
			end++
		}
		spans = append(spans, groupSpan{g: items[k].g, from: k, to: end})
		k = end
	}
	return spans
}

// prepareGroup validates group g and prepares its writes; any bad write
// fails the group whole.
func (b *Backend) prepareGroup(g int, ws []backend.Write) ([]batchItem, error) {
	if err := backend.ValidateGroup(ws); err != nil {
		return nil, err
	}
	items := make([]batchItem, 0, len(ws))
	for _, w := range ws {
		it, err := b.prepareWrite(w)
		if err != nil {
			return nil, writeError(w, err)
		}
		it.g = g
		items = append(items, it)
	}
	return items, nil
}

// groupRefusal explains a group of which some write was refused by its
// fence (nil when all applied). A group applies whole or not at all (see
// ApplyWrites); should a committed group ever show both, that is reported
// as an error naming what applied.
func (b *Backend) groupRefusal(ctx context.Context, items []batchItem, results []batchResult) error {
	refused, applied := -1, 0
	for k := range items {
		if results[k].applied {
			applied++
		} else if refused < 0 {
			refused = k
		}
	}
	if refused < 0 {
		return nil
	}
	err := b.refusedError(ctx, items[refused].w)
	if applied > 0 {
		return fmt.Errorf("%w (but %d earlier writes of the same group applied: a bug, please report it)", err, applied)
	}
	return err
}

// connectionLost reports whether SQLSTATE code says the session, not a
// statement, failed — the server is going away, shutting down, starting,
// or is no longer the primary — as across a failover: class 08
// (connection exception), 57P01 admin_shutdown (the postmaster died or
// was stopped), 57P02 crash_shutdown, 57P03 cannot_connect_now, 25006
// read_only_sql_transaction (a demoted primary, or a promoted standby
// still read-only) and 53300 too_many_connections. Sending a batch's
// groups again one by one would only fail again, so they all fail with
// the error as it is: neither invalid (the run is handed back, not failed)
// nor refused.
func connectionLost(code string) bool {
	switch code {
	case "57P01", "57P02", "57P03", "25006", "53300":
		return true
	}
	return strings.HasPrefix(code, "08")
}

// classifyWriteError marks a data exception (SQLSTATE class 22, e.g. a
// value out of range, or 54, e.g. a value nested too deep) as
// [backend.ErrInvalidArgument]: sending the same value again fails again.
func classifyWriteError(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "54")) {
		return fmt.Errorf("%w: the database refused a value: %w", backend.ErrInvalidArgument, err)
	}
	return err
}

// groupError names the group's run in err.
func groupError(ws []backend.Write, err error) error {
	if len(ws) == 0 {
		return err
	}
	return fmt.Errorf("writes of workflow run %s: %w", ws[0].WorkflowRunID, err)
}

// writeError names the write's kind and run.
func writeError(w backend.Write, err error) error {
	return fmt.Errorf("%s of workflow run %s: %w", w.Kind, w.WorkflowRunID, err)
}

// refusedError explains a write whose fence matched no row, as its single
// twin would.
func (b *Backend) refusedError(ctx context.Context, w backend.Write) error {
	if w.Kind == backend.WriteFinishStep || w.Kind == backend.WriteLinkChild {
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
			output = jsonOr(s.Output, "null") // a completed step's nil output is JSON null
		}
		it.sql = b.q.InsertStep
		it.args = append(base, s.ID, s.StepName, string(s.Kind), string(status),
			jsonOr(s.Config, "{}"), jsonArg(s.Context), output, jsonArg(s.Error),
			s.ChildWorkflowRunNamespaceID, s.ChildWorkflowRunID, msPtr(s.StartedAt), msPtr(s.FinishedAt), b.at())
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
			it.sql, it.args = b.q.CompleteStep, append(base, s.ID, jsonOr(s.Output, "null"), b.at())
		case backend.StepFailed:
			it.sql, it.args = b.q.FailStep, append(base, s.ID, jsonArg(s.Error), b.at())
		default:
			return it, fmt.Errorf("%w: step attempt %s cannot finish as %q", backend.ErrInvalidArgument, s.ID, s.Status)
		}
	case backend.WriteLinkChild:
		s := w.Step
		it.sql, it.args = b.q.SetStepChild, append(base, s.ID, *s.ChildWorkflowRunNamespaceID, *s.ChildWorkflowRunID, b.at())
	case backend.WriteCompleteRun:
		if err := checkJSON("output", w.Output); err != nil {
			return it, err
		}
		it.sql, it.args, it.parent = b.q.CompleteRun, append(base, jsonOr(w.Output, "null"), b.at()), true
	case backend.WriteParkRun:
		it.sql, it.args = b.q.ParkRun, append(base, ms(w.AvailableAt), b.at())
	case backend.WriteRescheduleRun:
		if err := checkJSON("error", w.Error); err != nil {
			return it, err
		}
		it.sql, it.args = b.q.RescheduleRun, append(base, ms(w.AvailableAt), jsonArg(w.Error), b.at())
	case backend.WriteFailRun:
		if err := checkJSON("error", w.Error); err != nil {
			return it, err
		}
		it.sql, it.args, it.parent = b.q.FailRun, append(base, jsonArg(w.Error), b.at()), true
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
func (b *Backend) sendWrites(ctx context.Context, items []batchItem, notifyFinished string) ([]batchResult, error) {
	stmts := b.planStatements(items)
	batch := &pgx.Batch{}
	for _, st := range stmts {
		batch.Queue(st.sql, st.args...)
	}
	if notifyFinished != "" {
		payload, _ := json.Marshal(notification{Schema: b.schema, Namespace: b.namespace, Kind: string(backend.EventRunFinished), IDs: []string{notifyFinished}})
		batch.Queue(b.q.NotifyFinished, string(payload), b.namespace, notifyFinished)
	}
	esc := batchEscapes(b.namespace, items)
	recorded := b.queueRecord(batch, &esc) // escapes.go; last, after the writes
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
	if notifyFinished != "" {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, err
		}
	}
	if recorded {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, err
		}
	}
	if err := br.Close(); err != nil { // the commit
		return nil, err
	}
	return results, nil
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
	type landed struct {
		parentNS, parentID *string
		status             string
		output, error      []byte
	}
	got := make(map[string]landed, len(st.ks))
	for rows.Next() {
		var id string
		var l landed
		if st.parent {
			err = rows.Scan(&id, &l.parentNS, &l.parentID, &l.status, &l.output, &l.error)
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
			results[k] = batchResult{applied: true, parentNS: l.parentNS, parentID: l.parentID, status: l.status, output: l.output, error: l.error}
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
// crash is harmless. The run notified names the finished run whose
// notification the batch's own transaction carried (inlineFinished).
func (b *Backend) announce(ctx context.Context, items []batchItem, results []batchResult, notified string) {
	var finished []string
	work := false
	now := time.Now()
	for k, it := range items {
		// A write followUp reports an error on (a parent not woken) did
		// apply: it is announced like the others.
		if !results[k].applied {
			continue
		}
		switch it.w.Kind {
		case backend.WriteCompleteRun, backend.WriteFailRun:
			if it.w.WorkflowRunID != notified {
				finished = append(finished, it.w.WorkflowRunID)
			}
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
	batch.Queue(b.q.AsyncCommit)
	for len(finished) > 0 {
		n := min(len(finished), notifyChunk)
		payload, _ := json.Marshal(notification{Schema: b.schema, Namespace: b.namespace, Kind: string(backend.EventRunFinished), IDs: finished[:n]})
		batch.Queue(b.q.Notify, string(payload))
		finished = finished[n:]
	}
	if work {
		payload, _ := json.Marshal(notification{Schema: b.schema, Namespace: b.namespace, Kind: string(backend.EventWorkAvailable)})
		batch.Queue(b.q.Notify, string(payload))
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
			if err := rows.Scan(&r.parentNS, &r.parentID, &r.status, &r.output, &r.error); err != nil {
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
// statement for all; not for a park whose run waits only on sleeps,
// Write.OnlySleeps, which it could not wake) and the wake-up of the
// parent of every child run that finished (sqlWakeParent, only for runs
// that have a parent), pipelined in one round trip. A failure is reported
// on the writes concerned, which did apply, as their single twins report
// it.
func (b *Backend) followUp(ctx context.Context, items []batchItem, results []batchResult, errs []error) {
	var parked []string
	var parkK, wakeK []int // positions in items
	batch := &pgx.Batch{}
	for k, it := range items {
		r := results[k]
		if !r.applied {
			continue
		}
		switch {
		case it.w.Kind == backend.WriteParkRun && !it.w.OnlySleeps:
			parked = append(parked, it.w.WorkflowRunID)
			parkK = append(parkK, k)
		case it.parent && r.parentNS != nil && r.parentID != nil:
			batch.Queue(b.q.WakeParent, *r.parentNS, *r.parentID, b.namespace, it.w.WorkflowRunID, b.at())
			wakeK = append(wakeK, k)
		}
	}
	if len(parked) > 0 {
		batch.Queue(b.q.ReconcileParkedRuns, b.namespace, parked, b.at())
	}
	if batch.Len() == 0 {
		return
	}
	if err := b.pool.SendBatch(ctx, batch).Close(); err != nil {
		for _, k := range wakeK {
			errs[items[k].g] = fmt.Errorf("workflow run %s finished but its parent could not be woken: %w", items[k].w.WorkflowRunID, err)
		}
		for _, k := range parkK {
			errs[items[k].g] = fmt.Errorf("park workflow run %s: reconcile wake-ups: %w", items[k].w.WorkflowRunID, err)
		}
	}
}
