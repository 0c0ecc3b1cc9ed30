package postgres

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// firstAnalyzeAfter is how many rows this process writes to a table
// without planner statistics before it analyzes it. Autovacuum's own
// threshold for a new table is 50 changed rows
// (autovacuum_analyze_threshold), acted on within its naptime (a minute),
// or never where autovacuum is off.
const firstAnalyzeAfter = 100

// firstAnalyzeTimeout bounds one first ANALYZE (a table never analyzed is
// sampled like any other: at most 30,000 rows at the default statistics
// target).
const firstAnalyzeTimeout = time.Minute

// A statsTable is one of the tables the engine analyzes once.
type statsTable int

const (
	runsTable statsTable = iota
	stepsTable
	statsTables
)

// firstAnalyze analyzes workflow_runs and step_attempts once each when
// they have no planner statistics and this process has written
// firstAnalyzeAfter rows to them: their first ANALYZE, which autovacuum
// gives a new table within a minute, or never where it is off.
//
// Why: without statistics PostgreSQL guesses that "namespace_id" = $1
// matches half a percent of the rows, and every index that starts with
// namespace_id looks as cheap as the primary key for a lookup by id. The
// step writes' fence then probed each run through
// workflow_runs_workflow_name_status_created_at_desc_idx, reading every
// run of the namespace once per run (W4 on a fresh database: 999 rows
// removed by its filter per probe, 11 ms a statement against 1.4–1.6; see
// docs/benchmarks.md). A plan cached before the ANALYZE is invalidated by
// it and made again with the statistics. Statistics, once there, stay
// good enough as the tables grow: the planner scales the row counts by the
// table's size, and a namespace's share of the rows is what by_id_ns
// estimates from them.
//
// The ANALYZE runs in a goroutine of its own, after the write that crossed
// the threshold, and never delays a write; a role that does not own the
// table gets a warning from PostgreSQL, not an error, and nothing changes.
// Each table is tried at most once per Backend. Close waits for it.
type firstAnalyze struct {
	b      *Backend
	ctx    context.Context
	cancel context.CancelFunc

	written [statsTables]atomic.Int64
	tried   [statsTables]atomic.Bool

	mu      sync.Mutex // guards stopped and wg.Add against stop
	stopped bool
	wg      sync.WaitGroup
}

func newFirstAnalyze(b *Backend) *firstAnalyze {
	ctx, cancel := context.WithCancel(context.Background())
	return &firstAnalyze{b: b, ctx: ctx, cancel: cancel}
}

// wrote counts n rows this process wrote to table t, and starts its first
// ANALYZE when they reach firstAnalyzeAfter.
func (f *firstAnalyze) wrote(t statsTable, n int) {
	if n <= 0 || f.tried[t].Load() {
		return
	}
	if f.written[t].Add(int64(n)) < firstAnalyzeAfter || !f.tried[t].CompareAndSwap(false, true) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.analyze(t)
	}()
}

// settled reports whether every table's first ANALYZE was tried, so that
// there is nothing left to count.
func (f *firstAnalyze) settled() bool {
	return f.tried[runsTable].Load() && f.tried[stepsTable].Load()
}

// analyze analyzes table t unless it has statistics already. It is best
// effort: an error leaves the table to autovacuum, as before.
func (f *firstAnalyze) analyze(t statsTable) {
	ctx, cancel := context.WithTimeout(f.ctx, firstAnalyzeTimeout)
	defer cancel()
	name, stmt := "workflow_runs", f.b.q.AnalyzeRuns
	if t == stepsTable {
		name, stmt = "step_attempts", f.b.q.AnalyzeSteps
	}
	var has bool
	if err := f.b.pool.QueryRow(ctx, f.b.q.HasStatistics, name).Scan(&has); err != nil || has {
		return // an error only leaves the statistics to autovacuum
	}
	_, _ = f.b.pool.Exec(ctx, stmt) // likewise
}

// stop cancels a first ANALYZE in flight and waits for its goroutine.
func (f *firstAnalyze) stop() {
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
	f.cancel()
	f.wg.Wait()
}
