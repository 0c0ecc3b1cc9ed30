package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
)

// R1 measures retention (issue 16): W1 while a prune deletes
// Options.PruneRuns finished runs from the same tables, against W1 alone
// on the same database. The finished runs are seeded, finished 60 days
// ago, each with the 3 completed steps of a W1 run, in a namespace of
// their own ("bench-old": the tables and their indexes are shared, and the
// bench's run counts of W1 do not scan them); the prune is the one `ow
// server` runs (Client.PruneRuns with a 30-day period, batches of 500 and
// the Pruner's rests: DefaultPrunePause and DefaultPruneDuty, or
// Options.PruneDuty). W1
// (Options.Runs, default 5,000 runs, each time in a namespace of its own)
// is measured r1Pairs times alone and r1Pairs times while the prune runs,
// in turn, so that other work on the machine weighs on both alike; the
// prune is stopped between the pairs (a stopped batch rolls back) and
// goes on where it was. The slowdown is the median over the pairs of
// 1 − runs/s while pruning ÷ runs/s alone. Then the rest of the prune runs
// without rests, and every seeded run must have been deleted.
const R1 = "R1"

// DefaultPruneRuns is R1's number of finished runs to prune.
const DefaultPruneRuns = 1_000_000

// r1Pairs is how many times R1 measures W1 alone and while pruning.
const r1Pairs = 5

// r1Namespace is the namespace of R1's seeded finished runs.
const r1Namespace = "bench-old"

// seedChunk is how many runs one seeding statement inserts.
const seedChunk = 50_000

// R1's metrics.
const (
	MetricAloneRunsPerS = "alone_runs_per_s" // R1: W1's runs/s without the prune
	MetricSlowdown      = "slowdown"         // R1: 1 − runs/s while pruning ÷ runs/s alone
	MetricPrunedPerS    = "pruned_per_s"     // R1: runs deleted per second by the prune beside W1
)

// prune is R1.
func (m *measurement) prune(ctx context.Context) (Result, error) {
	n, total := m.o.runsFor(W1), m.o.PruneRuns
	res := m.result(n, n*3)
	p := m.progress()
	seedStart := time.Now()
	if err := seedFinished(ctx, m.t, total, p); err != nil {
		return res, fmt.Errorf("seed %d finished runs: %w", total, err)
	}
	fmt.Fprintf(m.o.Progress, "%s: seeded %s finished runs in %s\n", m.label, thousands(total), time.Since(seedStart).Round(time.Second))
	old, err := openBackendIn(ctx, m.t.kind(), m.t.dsn(), r1Namespace)
	if err != nil {
		return res, err
	}
	defer old.Close()
	c := ow.NewClient(old)
	retention := ow.Retention{Default: 30 * 24 * time.Hour}
	duty := m.o.PruneDuty
	if duty == 0 {
		duty = ow.DefaultPruneDuty
	}

	var alone, during, slowdowns []float64
	deleted, active := 0, time.Duration(0)
	for i := range r1Pairs {
		a, err := m.w1In(ctx, fmt.Sprintf("bench-alone-%d", i), n)
		if err != nil {
			return res, err
		}
		pctx, stopPrune := context.WithCancel(ctx)
		var wg sync.WaitGroup
		var rep ow.PruneReport
		var pruneErr error
		began := time.Now()
		wg.Add(1)
		go func() { // owned here: stopped and awaited below
			defer wg.Done()
			rep, pruneErr = c.PruneRuns(pctx, retention, ow.PruneOptions{Pause: ow.DefaultPrunePause, Duty: duty})
		}()
		d, err := m.w1In(ctx, fmt.Sprintf("bench-during-%d", i), n)
		stopPrune()
		wg.Wait()
		if err != nil {
			return res, err
		}
		if pruneErr != nil && !errors.Is(pruneErr, context.Canceled) {
			return res, fmt.Errorf("prune: %w", pruneErr)
		}
		if pruneErr == nil {
			return res, fmt.Errorf("the prune of %d runs ended before W1 measurement %d did: raise --prune-runs", total, i+1)
		}
		deleted += rep.Deleted.Total()
		active += time.Since(began)
		alone, during, slowdowns = append(alone, a), append(during, d), append(slowdowns, 1-d/a)
		fmt.Fprintf(m.o.Progress, "%s: pair %d: W1 %.0f runs/s alone, %.0f while pruning (%s runs pruned so far)\n", m.label, i+1, a, d, thousands(deleted))
	}
	rest := time.Now()
	rep, err := c.PruneRuns(ctx, retention, ow.PruneOptions{Progress: func(pp ow.PruneProgress) {
		p.update(deleted+pp.Deleted.Total(), total, "runs pruned (the rest, without rests)")
	}})
	if err != nil {
		return res, fmt.Errorf("prune the rest: %w", err)
	}
	restSecs := time.Since(rest).Seconds()
	if got := deleted + rep.Deleted.Total(); got != total {
		return res, fmt.Errorf("the prune deleted %d runs, want the %d seeded", got, total)
	}
	fmt.Fprintf(m.o.Progress, "%s: the last %s runs pruned without rests in %.1f s (%.0f runs/s)\n", m.label, thousands(rep.Deleted.Total()), restSecs, float64(rep.Deleted.Total())/restSecs)
	fmt.Fprintf(m.o.Progress, "%s: W1 runs/s alone %v, while pruning %v\n", m.label, roundAll(alone), roundAll(during))
	res.Metrics[MetricAloneRunsPerS] = median(alone)
	res.Metrics[MetricRunsPerS] = median(during)
	res.Metrics[MetricStepsPerS] = median(during) * 3
	res.Metrics[MetricSlowdown] = median(slowdowns)
	res.Metrics[MetricPrunedPerS] = float64(deleted) / active.Seconds()
	res.Metrics[MetricSeconds] = active.Seconds()
	return res, nil
}

func roundAll(vs []float64) []float64 {
	out := slices.Clone(vs)
	for i, v := range out {
		out[i] = float64(int(v + 0.5))
	}
	return out
}

// w1In measures W1 (n runs of bench-seq3, enqueued, then executed by one
// worker in this process) in namespace ns, verifies every output, and
// returns its runs per second, from the worker's start to the last
// run's finish.
func (m *measurement) w1In(ctx context.Context, ns string, n int) (float64, error) {
	b, err := openBackendIn(ctx, m.t.kind(), m.t.dsn(), ns)
	if err != nil {
		return 0, err
	}
	defer b.Close()
	if err := startMany(ctx, b, seq3, n, nil); err != nil {
		return 0, fmt.Errorf("enqueue %d runs: %w", n, err)
	}
	wb, err := openBackendIn(ctx, m.t.kind(), m.t.dsn(), ns)
	if err != nil {
		return 0, err
	}
	w, err := newWorker(wb, m.id, m.o.Concurrency, m.o.Progress, nil)
	begin := time.Now()
	if err == nil {
		err = w.Start(ctx)
	}
	if err != nil {
		return 0, errors.Join(err, wb.Close())
	}
	seen, err := waitAll(ctx, &backendCounter{b: b}, n, nil)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	err = errors.Join(err, w.Stop(sctx), wb.Close())
	cancel()
	if err != nil {
		return 0, err
	}
	runs, err := listRuns(ctx, b)
	if err != nil {
		return 0, err
	}
	if err := verify(runs, nameSeq3, n, 3); err != nil {
		return 0, err
	}
	return float64(n) / endOf(runs, begin, seen).Sub(begin).Seconds(), nil
}

// seedFinished inserts total runs of bench-seq3 into namespace
// r1Namespace, each completed with its 3 completed steps, created and
// finished 60 days ago (a millisecond apart), in statements of seedChunk
// runs; then it refreshes the planner's statistics, as autovacuum would
// have.
func seedFinished(ctx context.Context, t target, total int, p *progress) error {
	base := time.Now().Add(-60 * 24 * time.Hour).UTC().Truncate(time.Millisecond)
	switch t.kind() {
	case Postgres:
		conn, err := pgx.Connect(ctx, t.dsn())
		if err != nil {
			return err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		schema := pgx.Identifier{postgres.DefaultSchema}.Sanitize()
		for lo := 1; lo <= total; lo += seedChunk {
			hi := min(lo+seedChunk-1, total)
			if _, err := conn.Exec(ctx, fmt.Sprintf(pgSeed, schema), r1Namespace, base, lo, hi); err != nil {
				return err
			}
			p.update(hi, total, "finished runs seeded")
		}
		_, err = conn.Exec(ctx, fmt.Sprintf("ANALYZE %[1]s.workflow_runs; ANALYZE %[1]s.step_attempts", schema))
		return err
	default:
		db, err := sql.Open("sqlite", t.dsn()+"?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)")
		if err != nil {
			return err
		}
		defer db.Close()
		for lo := 1; lo <= total; lo += seedChunk {
			hi := min(lo+seedChunk-1, total)
			for _, q := range []string{sqliteSeedRuns, sqliteSeedSteps} {
				if _, err := db.ExecContext(ctx, q, sql.Named("ns", r1Namespace), sql.Named("base", backend.FormatTime(base)),
					sql.Named("lo", lo), sql.Named("hi", hi)); err != nil {
					return err
				}
			}
			p.update(hi, total, "finished runs seeded")
		}
		_, err = db.ExecContext(ctx, "ANALYZE")
		return err
	}
}

// pgSeed inserts runs $3…$4 (and their steps) into namespace $1, created
// at $2 + i ms; %[1]s is the schema.
const pgSeed = `
WITH g AS (
  SELECT i, $2::timestamptz + i * INTERVAL '1 millisecond' AS t, 'wrun_seed' || lpad(i::text, 10, '0') AS id
  FROM generate_series($3::bigint, $4::bigint) AS i
),
runs AS (
  INSERT INTO %[1]s.workflow_runs (namespace_id, id, workflow_name, status, config, input, output, attempts,
    worker_id, started_at, finished_at, created_at, updated_at)
  SELECT $1, g.id, 'bench-seq3', 'completed', '{}', jsonb_build_object('i', g.i), jsonb_build_object('i', g.i, 'sum', 3 * g.i + 3), 1,
    'seed', g.t, g.t, g.t, g.t
  FROM g
)
INSERT INTO %[1]s.step_attempts (namespace_id, id, workflow_run_id, step_name, kind, status, config, output,
  started_at, finished_at, created_at, updated_at)
SELECT $1, 'step_seed' || lpad(g.i::text, 10, '0') || '_' || k, g.id, 'step-' || k, 'function', 'completed', '{}',
  jsonb_build_object('i', g.i, 'k', k), g.t, g.t, g.t, g.t
FROM g CROSS JOIN generate_series(0, 2) AS k`

// sqliteSeedRuns and sqliteSeedSteps insert runs :lo…:hi (and their
// steps) into namespace :ns, created at :base + i ms.
const (
	sqliteSeedRuns = `
WITH RECURSIVE g(i) AS (SELECT :lo UNION ALL SELECT i + 1 FROM g WHERE i < :hi)
INSERT INTO workflow_runs (namespace_id, id, workflow_name, status, config, input, output, attempts,
  worker_id, started_at, finished_at, created_at, updated_at)
SELECT :ns, printf('wrun_seed%010d', i), 'bench-seq3', 'completed', '{}', json_object('i', i), json_object('i', i, 'sum', 3 * i + 3), 1,
  'seed', t, t, t, t
FROM (SELECT i, strftime('%Y-%m-%dT%H:%M:%fZ', :base, printf('+%.3f seconds', i / 1000.0)) AS t FROM g)`
	sqliteSeedSteps = `
WITH RECURSIVE g(i) AS (SELECT :lo UNION ALL SELECT i + 1 FROM g WHERE i < :hi),
k(k) AS (VALUES (0), (1), (2))
INSERT INTO step_attempts (namespace_id, id, workflow_run_id, step_name, kind, status, config, output,
  started_at, finished_at, created_at, updated_at)
SELECT :ns, printf('step_seed%010d_%d', i, k), printf('wrun_seed%010d', i), 'step-' || k, 'function', 'completed', '{}',
  json_object('i', i, 'k', k), t, t, t, t
FROM (SELECT i, strftime('%Y-%m-%dT%H:%M:%fZ', :base, printf('+%.3f seconds', i / 1000.0)) AS t FROM g) CROSS JOIN k`
)
