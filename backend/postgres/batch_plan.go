package postgres

import (
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

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
//     it must refuse) stays a statement of its own, in place;
//   - when there are both step inserts and step completions to combine,
//     they go as one statement (write_steps) at the place of the first of
//     either: no transition of their runs precedes them, and a combined
//     completion's attempt is written nowhere else in the batch, so the
//     two parts neither meet nor move past anything they depend on.
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
		case kind == backend.WriteFinishStep && it.sql == b.q.CompleteStep && !transitioned[run] && stepWrites[it.w.Step.ID] == 1:
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
	if ins, fin := groups[backend.WriteInsertStep], groups[backend.WriteFinishStep]; len(ins) >= 2 && len(fin) >= 2 {
		ks := append(append([]int(nil), ins...), fin...)
		args := append(insertStepsArgs(b.namespace, items, ins), completeStepsArgs(b.namespace, items, fin)[1:]...)
		at[min(ins[0], fin[0])] = statement{ks: ks, combined: true, sql: b.q.WriteSteps, args: append(args, b.at())}
		for _, k := range ks {
			skip[k] = true
		}
		delete(groups, backend.WriteInsertStep)
		delete(groups, backend.WriteFinishStep)
	}
	for kind, ks := range groups {
		if len(ks) < 2 {
			continue
		}
		st := statement{ks: ks, combined: true}
		pos := ks[len(ks)-1]
		switch kind {
		case backend.WriteInsertStep:
			st.sql, st.args, pos = b.q.InsertSteps, append(insertStepsArgs(b.namespace, items, ks), b.at()), ks[0]
		case backend.WriteFinishStep:
			st.sql, st.args, pos = b.q.CompleteSteps, append(completeStepsArgs(b.namespace, items, ks), b.at()), ks[0]
		case backend.WriteCompleteRun:
			st.sql, st.args, st.parent = b.q.CompleteRuns, append(completeRunsArgs(b.namespace, items, ks), b.at()), true
		case backend.WriteParkRun:
			st.sql, st.args = b.q.ParkRuns, append(parkRunsArgs(b.namespace, items, ks), b.at())
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
