package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
)

// Scale is the workload id of [RunScale] ("ow bench scale"): the engine
// on a PostgreSQL database holding ScaleOptions.Finished finished runs
// and their step attempts, against an empty one in the same sitting
// (issue 23, "Ten million runs").
const Scale = "scale"

// Scale defaults.
const (
	// DefaultScaleFinished is the finished runs RunScale loads.
	DefaultScaleFinished = 10_000_000
	// DefaultScalePairs is how many times W1 is measured on each database
	// (in turn), and how many R1-style pairs the retention measurement
	// takes.
	DefaultScalePairs = 3
	// scaleNamespace holds the loaded runs; W2, the pages, the counts and
	// the prune work in it.
	scaleNamespace = "scale"
	// scaleChunk is how many runs (with their 3 attempts each) one load
	// statement inserts.
	scaleChunk = 100_000
	// scaleQueries is how many times each page shape and the count are
	// timed.
	scaleQueries = 100
	// scalePage is the page size of the timed lists (the dashboard's).
	scalePage = 50
	// scaleWorkflows is how many workflow names the loaded runs spread over.
	scaleWorkflows = 20
	// scaleFailedEvery makes one loaded run in this many failed, the rest
	// completed.
	scaleFailedEvery = 10
)

// The targets (issue 23, "Ten million runs").
const (
	TargetW1Ratio     = 0.90 // W1 on the loaded database ÷ W1 on the empty one, at least
	TargetW2P99Ms     = 25.0 // W2 p99 on the loaded database, at most
	TargetPageP99Ms   = 20.0 // a page of 50 with a status filter, p99, at most
	TargetCountP99Ms  = 5.0  // CountWorkflowRuns, p99, at most
	TargetPruneSlowdn = 0.15 // W1 slowed by a prune, at most
)

// Scale metrics (JSON keys of the scale result).
const (
	MetricFinishedRuns  = "finished_runs"    // runs loaded
	MetricLoadSeconds   = "load_s"           // inserting the runs and attempts (secondary indexes dropped)
	MetricIndexSeconds  = "index_s"          // rebuilding the secondary indexes after the load
	MetricAnalyzeSecs   = "analyze_s"        // ANALYZE of the loaded tables
	MetricDatabaseBytes = "db_bytes"         // pg_database_size of the loaded database after the load
	MetricEmptyRunsPerS = "empty_runs_per_s" // W1 runs/s on the empty database (median)
	MetricW1Ratio       = "w1_ratio"         // W1 runs/s loaded ÷ empty (median of the pairs' ratios)
	MetricEmptyP99      = "empty_p99_ms"     // W2 p99 on the empty database
	MetricPageP99       = "page_p99_ms"      // a page of 50 with a status filter, p99
	MetricCountP99      = "count_p99_ms"     // CountWorkflowRuns p99
)

func init() {
	metricOrder = append(metricOrder, MetricFinishedRuns, MetricLoadSeconds, MetricIndexSeconds, MetricAnalyzeSecs,
		MetricDatabaseBytes, MetricEmptyRunsPerS, MetricW1Ratio, MetricEmptyP99, MetricPageP99, MetricCountP99)
}

// ScaleOptions configure [RunScale]. The zero value loads
// DefaultScaleFinished runs and prunes 1,000,000 of them.
type ScaleOptions struct {
	// Finished is the number of finished runs loaded (each with 3
	// completed step attempts; one in scaleFailedEvery failed). 0 means
	// DefaultScaleFinished; at least 1,000.
	Finished int
	// PruneRuns is how many of them finished 60 days ago, for the
	// retention measurement to prune (the others finished within the last
	// 20 days and are kept). 0 means min(1,000,000, Finished/10).
	PruneRuns int
	// PruneDuty is the prune's duty beside W1 (ow.PruneOptions.Duty). 0
	// means ow.DefaultPruneDuty, the Pruner's.
	PruneDuty float64
	// Runs is W1's run count; W2 runs Runs/25 (at least 20). 0 means
	// 5,000.
	Runs int
	// Concurrency is the worker's slots. 0 means DefaultConcurrency.
	Concurrency int
	// Pairs is how many times W1 is measured on each database, in turn,
	// and how many alone/pruning pairs the retention measurement takes. 0
	// means DefaultScalePairs.
	Pairs int
	// Keep leaves both databases in place (their names are printed), for
	// EXPLAIN by hand.
	Keep bool
	// Reuse, when set, is the loaded database of an earlier run kept with
	// Keep, to be measured again: nothing is loaded. It must have every
	// index in place (an index rebuild that was interrupted must be
	// finished by hand). What earlier measurements left is undone first
	// (restore): the runs W1, W2 and the retention measurement's W1 added
	// are deleted and the pruned runs, all or some, inserted again, then
	// VACUUM (ANALYZE); its namespace must then count exactly Finished
	// runs, so Finished and PruneRuns must be those of the load. A reused
	// database is never dropped.
	Reuse string
	// PostgresURL is the admin connection (CREATEDB); empty means
	// DefaultPostgresURL.
	PostgresURL string
	// Progress receives progress lines; nil discards them.
	Progress io.Writer
}

func (o ScaleOptions) withDefaults() (ScaleOptions, error) {
	if o.Finished == 0 {
		o.Finished = DefaultScaleFinished
	}
	if o.Finished < 1000 {
		return o, fmt.Errorf("finished %d: want at least 1000", o.Finished)
	}
	if o.PruneRuns < 0 || o.PruneRuns > o.Finished {
		return o, fmt.Errorf("prune runs %d: want 0 (the default) to --finished (%d)", o.PruneRuns, o.Finished)
	}
	if o.PruneRuns == 0 {
		o.PruneRuns = min(1_000_000, o.Finished/10)
	}
	if o.PruneDuty < 0 || o.PruneDuty > 1 {
		return o, fmt.Errorf("prune duty %g: want 0 (the Pruner's default) to 1", o.PruneDuty)
	}
	if o.PruneDuty == 0 {
		o.PruneDuty = ow.DefaultPruneDuty
	}
	if o.Runs < 0 {
		return o, fmt.Errorf("runs %d: want 0 (5,000) or more", o.Runs)
	}
	if o.Runs == 0 {
		o.Runs = 5000
	}
	if o.Concurrency < 0 {
		return o, fmt.Errorf("concurrency %d: want 1 or more", o.Concurrency)
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Pairs < 0 {
		return o, fmt.Errorf("pairs %d: want 1 or more", o.Pairs)
	}
	if o.Pairs == 0 {
		o.Pairs = DefaultScalePairs
	}
	if o.PostgresURL == "" {
		o.PostgresURL = DefaultPostgresURL
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return o, nil
}

// Check is one figure of the scale workload beside its target.
type Check struct {
	// Name is the JSON key of the figure (a metric name).
	Name string
	// What says what was measured, for the text report.
	What string
	// Value is the figure; Measured is false when it could not be taken
	// (Note says why).
	Value    float64
	Measured bool
	// Target is the bound, AtMost whether Value must be ≤ it (else ≥).
	Target float64
	AtMost bool
	Note   string
}

// Pass is whether the figure was measured and meets its target.
func (c Check) Pass() bool {
	if !c.Measured {
		return false
	}
	if c.AtMost {
		return c.Value <= c.Target
	}
	return c.Value >= c.Target
}

func (c Check) targetText(format func(float64) string) string {
	if c.AtMost {
		return "≤ " + format(c.Target)
	}
	return "≥ " + format(c.Target)
}

// ScaleReport is what [RunScale] measured.
type ScaleReport struct {
	Options ScaleOptions
	Env     Environment
	// Result holds every figure as a metric (workload Scale, backend
	// postgres, Runs the W1 run count).
	Result Result
	// Checks are the five figures against their targets.
	Checks []Check
	// Databases are the loaded and empty databases' names (dropped unless
	// Options.Keep).
	Loaded, Empty string
}

// RunScale is "ow bench scale": on two fresh PostgreSQL databases of the
// admin's server, both migrated, it loads o.Finished finished runs with
// their step attempts into one (server-side generate_series, in
// statements of scaleChunk runs, with the secondary indexes dropped
// during the load and rebuilt from their own definitions after, then
// ANALYZE), checks the loaded counts, and then measures, the empty
// database beside the loaded one:
//
//   - W1 (o.Runs runs of bench-seq3, one worker in this process) o.Pairs
//     times on each, in turn, each in a namespace of its own: the
//     loaded÷empty ratio of runs/s (median of the pairs' ratios);
//   - W2 (o.Runs/25 runs of bench-one, started and awaited one at a
//     time) in the loaded namespace: p99;
//   - pages of 50 with a status filter in the loaded namespace (completed
//     and failed, each walked page by page from the newest, and the first
//     page of running and pending, which no loaded run has): p99;
//   - CountWorkflowRuns of the loaded namespace: p99, and that it counts
//     exactly what was loaded;
//   - R1's retention measurement: W1 alone and W1 while Client.PruneRuns
//     deletes the o.PruneRuns runs finished 60 days ago (30-day period,
//     the Pruner's rests), o.Pairs pairs; then the rest of the prune
//     without rests, and that exactly o.PruneRuns runs were deleted.
//
// A wrong output, count or deletion fails the measurement. Both databases
// are dropped at the end (also after an error or interrupt) unless
// o.Keep.
func RunScale(ctx context.Context, o ScaleOptions) (*ScaleReport, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	admin, err := connectAdmin(ctx, o.PostgresURL)
	if err != nil {
		return nil, err
	}
	defer admin.close()
	rep := &ScaleReport{Options: o, Env: environment()}
	if rep.Env.PostgresVersion, err = admin.serverVersion(ctx); err != nil {
		return nil, err
	}
	s := &scaleRun{o: o, admin: admin, rep: rep}
	rep.Result = Result{Engine: EngineGo, Workload: Scale, Backend: Postgres, Concurrency: o.Concurrency,
		Runs: o.Runs, Steps: 3 * o.Runs, Repeat: o.Pairs, Metrics: map[string]float64{}}
	err = s.run(ctx)
	rep.Env.LoadEnd = loadAverage()
	if err != nil {
		rep.Result.Error = err.Error()
	}
	rep.Checks = s.checks()
	return rep, err
}

// scaleRun is one RunScale.
type scaleRun struct {
	o             ScaleOptions
	admin         *pgAdmin
	rep           *ScaleReport
	loaded, empty *pgTarget
	// pruneNote says why the prune's slowdown was not measured, if not.
	pruneNote string
	// w2Runs are the completed runs W2 added to the loaded namespace (0
	// again after restore).
	w2Runs int
}

func (s *scaleRun) say(format string, args ...any) {
	fmt.Fprintf(s.o.Progress, "scale: "+format+"\n", args...)
}

func (s *scaleRun) run(ctx context.Context) (err error) {
	if s.o.Reuse != "" {
		s.loaded = &pgTarget{admin: s.admin, name: s.o.Reuse, url: s.admin.dbURL(s.o.Reuse)}
	} else if s.loaded, err = newPostgresTargetPrefixed(ctx, s.admin, dbPrefix+"scale_"); err != nil {
		return err
	}
	s.rep.Loaded = s.loaded.name
	if s.empty, err = newPostgresTargetPrefixed(ctx, s.admin, dbPrefix+"scale_empty_"); err != nil {
		return errors.Join(err, s.drop(ctx))
	}
	s.rep.Empty = s.empty.name
	defer func() { err = errors.Join(err, s.drop(ctx)) }()
	s.say("databases %s (loaded) and %s (empty)", s.loaded.name, s.empty.name)

	m := s.rep.Result.Metrics
	if s.o.Reuse == "" {
		if err := s.load(ctx); err != nil {
			return fmt.Errorf("load %d finished runs: %w", s.o.Finished, err)
		}
	} else if err := s.reuse(ctx); err != nil {
		return fmt.Errorf("reuse %s: %w", s.o.Reuse, err)
	}
	if err := s.checkCounts(ctx, s.o.Finished); err != nil {
		return err
	}

	// W1, empty and loaded in turn (the order alternating), so that other
	// work on the machine weighs on both alike.
	var empty, loaded, ratios []float64
	for i := range s.o.Pairs {
		var e, l float64
		measure := func(t *pgTarget, into *float64, which string) error {
			v, err := s.w1(ctx, t, fmt.Sprintf("w1-%s-%d", which, i))
			*into = v
			return err
		}
		first, second := func() error { return measure(s.empty, &e, "empty") }, func() error { return measure(s.loaded, &l, "loaded") }
		if i%2 == 1 {
			first, second = second, first
		}
		if err := errors.Join(first(), second()); err != nil {
			return fmt.Errorf("W1: %w", err)
		}
		empty, loaded, ratios = append(empty, e), append(loaded, l), append(ratios, l/e)
		s.say("W1 pair %d: %.0f runs/s empty, %.0f loaded (%.2f)", i+1, e, l, l/e)
	}
	m[MetricEmptyRunsPerS], m[MetricRunsPerS], m[MetricW1Ratio] = median(empty), median(loaded), median(ratios)
	m[MetricStepsPerS] = 3 * median(loaded)

	w2 := max(20, s.o.Runs/25)
	for _, t := range []*pgTarget{s.empty, s.loaded} {
		lat, err := s.w2(ctx, t, w2)
		if err != nil {
			return fmt.Errorf("W2: %w", err)
		}
		if t == s.empty {
			m[MetricEmptyP99] = percentile(lat, 99)
			continue
		}
		s.w2Runs = w2
		m[MetricP50], m[MetricP95], m[MetricP99] = percentile(lat, 50), percentile(lat, 95), percentile(lat, 99)
	}
	s.say("W2 p99: %.1f ms empty, %.1f ms loaded (%d runs each)", m[MetricEmptyP99], m[MetricP99], w2)

	pages, err := s.pages(ctx)
	if err != nil {
		return fmt.Errorf("pages: %w", err)
	}
	m[MetricPageP99] = percentile(pages, 99)
	counts, err := s.counts(ctx)
	if err != nil {
		return fmt.Errorf("counts: %w", err)
	}
	m[MetricCountP99] = percentile(counts, 99)
	s.say("page of %d with a status filter: p50 %.2f ms, p99 %.2f ms (%d pages); count p50 %.2f ms, p99 %.2f ms",
		scalePage, percentile(pages, 50), m[MetricPageP99], len(pages), percentile(counts, 50), m[MetricCountP99])

	if err := s.prune(ctx); err != nil {
		return fmt.Errorf("retention: %w", err)
	}
	if err := s.checkCounts(ctx, s.o.Finished-s.o.PruneRuns); err != nil {
		return err
	}
	if !s.o.Keep && s.o.Reuse == "" {
		return nil // dropped next
	}
	// A kept load is left as it was loaded, for the next --reuse.
	if err := s.restore(ctx); err != nil {
		return fmt.Errorf("restore %s: %w", s.loaded.name, err)
	}
	return s.checkCounts(ctx, s.o.Finished)
}

// drop drops both databases unless Keep; a reused one is kept.
func (s *scaleRun) drop(ctx context.Context) error {
	var names []string
	var errs []error
	for _, t := range []*pgTarget{s.loaded, s.empty} {
		if t == nil {
			continue
		}
		if s.o.Keep || (t == s.loaded && s.o.Reuse != "") {
			names = append(names, t.name)
			continue
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		errs = append(errs, t.destroy(cctx))
		cancel()
	}
	if len(names) > 0 {
		s.say("kept databases %s", strings.Join(names, ", "))
	}
	return errors.Join(errs...)
}

// load inserts the finished runs into the loaded database's namespace
// scaleNamespace, with the secondary indexes of workflow_runs and
// step_attempts (those backing no constraint) dropped, then rebuilds them
// from their saved definitions and ANALYZEs.
func (s *scaleRun) load(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, s.loaded.url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	schema := pgx.Identifier{postgres.DefaultSchema}.Sanitize()
	// The load's own transactions may lose their last commits in a crash
	// (the database is dropped then anyway); index builds get memory.
	if _, err := conn.Exec(ctx, "SET synchronous_commit = off; SET maintenance_work_mem = '512MB'"); err != nil {
		return err
	}
	rows, err := conn.Query(ctx, `SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
		FROM pg_index i
		WHERE i.indrelid IN ($1::regclass, $2::regclass)
		  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
		ORDER BY 1`, postgres.DefaultSchema+".workflow_runs", postgres.DefaultSchema+".step_attempts")
	if err != nil {
		return err
	}
	type index struct{ name, def string }
	idx, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (index, error) {
		var x index
		return x, r.Scan(&x.name, &x.def)
	})
	if err != nil {
		return fmt.Errorf("read the index definitions: %w", err)
	}
	for _, x := range idx {
		if _, err := conn.Exec(ctx, "DROP INDEX "+x.name); err != nil {
			return err
		}
	}
	m := s.rep.Result.Metrics
	insert := s.inserter(conn)
	p := &progress{w: s.o.Progress, label: "scale", last: time.Now()}
	begin := time.Now()
	for lo := 1; lo <= s.o.Finished; lo += scaleChunk {
		hi := min(lo+scaleChunk-1, s.o.Finished)
		if err := insert(ctx, lo, hi); err != nil {
			return err
		}
		p.update(hi, s.o.Finished, fmt.Sprintf("finished runs loaded (%.0f runs/s)", float64(hi)/time.Since(begin).Seconds()))
	}
	m[MetricLoadSeconds] = time.Since(begin).Seconds()
	s.say("loaded %s runs and %s step attempts in %.0f s (%.0f runs/s)", thousands(s.o.Finished), thousands(3*s.o.Finished),
		m[MetricLoadSeconds], float64(s.o.Finished)/m[MetricLoadSeconds])
	begin = time.Now()
	for _, x := range idx {
		if _, err := conn.Exec(ctx, x.def); err != nil {
			return fmt.Errorf("rebuild %s: %w", x.name, err)
		}
	}
	m[MetricIndexSeconds] = time.Since(begin).Seconds()
	s.say("rebuilt %d secondary indexes in %.0f s", len(idx), m[MetricIndexSeconds])
	begin = time.Now()
	for _, table := range []string{"workflow_runs", "step_attempts"} {
		if _, err := conn.Exec(ctx, fmt.Sprintf("VACUUM (ANALYZE) %s.%s", schema, table)); err != nil {
			return err
		}
	}
	m[MetricAnalyzeSecs] = time.Since(begin).Seconds()
	var size int64
	if err := conn.QueryRow(ctx, "SELECT pg_database_size(current_database())").Scan(&size); err != nil {
		return err
	}
	m[MetricDatabaseBytes] = float64(size)
	m[MetricFinishedRuns] = float64(s.o.Finished)
	s.say("VACUUM (ANALYZE) in %.0f s; the database is %.1f GB", m[MetricAnalyzeSecs], float64(size)/1e9)
	return nil
}

// inserter returns the function that inserts the loaded runs lo…hi
// (pgScaleLoad) on conn, leaving those already there: the kept runs
// spread evenly over the 20 days before now, the pruned ones 1 ms apart
// from 60 days ago.
func (s *scaleRun) inserter(conn *pgx.Conn) func(ctx context.Context, lo, hi int) error {
	now := time.Now().UTC().Truncate(time.Millisecond)
	old := now.Add(-60 * 24 * time.Hour)
	recent := now.Add(-20 * 24 * time.Hour)
	step := float64(20*24*time.Hour/time.Microsecond) / float64(max(1, s.o.Finished-s.o.PruneRuns))
	stmt := fmt.Sprintf(pgScaleLoad, pgx.Identifier{postgres.DefaultSchema}.Sanitize())
	return func(ctx context.Context, lo, hi int) error {
		_, err := conn.Exec(ctx, stmt, scaleNamespace, lo, hi, s.o.PruneRuns, old, recent, step, scaleWorkflows, scaleFailedEvery)
		return err
	}
}

// pgScaleExtra deletes the runs of the loaded database that are not of
// the load (cascading to their attempts): every other namespace's (the W1
// measurements'), and the runs of the loaded namespace $1 whose ids are
// outside the load's 'wrun_scale…' range (W2's). Both are ranges of the
// primary key. %[1]s is the schema.
const pgScaleExtra = `
DELETE FROM %[1]s.workflow_runs
WHERE namespace_id < $1 OR namespace_id > $1
   OR (namespace_id = $1 AND (id < 'wrun_scale' OR id >= 'wrun_scalf'))`

// pgScaleHave counts the loaded runs $2…$3 of namespace $1 (an
// index-only range of the primary key). %[1]s is the schema.
const pgScaleHave = `
SELECT count(*) FROM %[1]s.workflow_runs
WHERE namespace_id = $1 AND id BETWEEN 'wrun_scale' || lpad($2::bigint::text, 10, '0') AND 'wrun_scale' || lpad($3::bigint::text, 10, '0')`

// restore puts the loaded database back as it was loaded, for a
// measurement on it (Reuse) or a later one (a kept load): it deletes the
// runs the measurements added (pgScaleExtra), inserts again every loaded
// run of the pruned range 1…PruneRuns that is missing (a whole or
// interrupted prune), and, when it changed anything, VACUUMs and ANALYZEs
// both tables, as autovacuum would (it is off on the shared server these
// figures were taken on, and its timing would be noise anyway), so that
// each measurement starts from the same tables and statistics.
func (s *scaleRun) restore(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, s.loaded.url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "SET synchronous_commit = off; SET maintenance_work_mem = '512MB'"); err != nil {
		return err
	}
	schema := pgx.Identifier{postgres.DefaultSchema}.Sanitize()
	tag, err := conn.Exec(ctx, fmt.Sprintf(pgScaleExtra, schema), scaleNamespace)
	if err != nil {
		return fmt.Errorf("delete the measurements' runs: %w", err)
	}
	deleted := int(tag.RowsAffected())
	s.w2Runs = 0
	insert := s.inserter(conn)
	restored := 0
	for lo := 1; lo <= s.o.PruneRuns; lo += scaleChunk {
		hi := min(lo+scaleChunk-1, s.o.PruneRuns)
		var have int
		if err := conn.QueryRow(ctx, fmt.Sprintf(pgScaleHave, schema), scaleNamespace, lo, hi).Scan(&have); err != nil {
			return err
		}
		if have == hi-lo+1 {
			continue
		}
		if err := insert(ctx, lo, hi); err != nil {
			return fmt.Errorf("insert the pruned runs %d…%d again: %w", lo, hi, err)
		}
		restored += hi - lo + 1 - have
	}
	if deleted == 0 && restored == 0 {
		s.say("restore: the load is as loaded")
		return nil
	}
	begin := time.Now()
	for _, table := range []string{"workflow_runs", "step_attempts"} {
		if _, err := conn.Exec(ctx, fmt.Sprintf("VACUUM (ANALYZE) %s.%s", schema, table)); err != nil {
			return err
		}
	}
	s.say("restore: deleted %s runs of earlier measurements, inserted %s pruned runs again, VACUUM (ANALYZE) in %.0f s",
		thousands(deleted), thousands(restored), time.Since(begin).Seconds())
	return nil
}

// reuse checks that the Reuse database has every index of the empty
// one's workflow_runs and step_attempts, records its size, and restores
// it.
func (s *scaleRun) reuse(ctx context.Context) error {
	const indexes = `SELECT count(*) FROM pg_index WHERE indrelid IN ($1::regclass, $2::regclass)`
	var n [2]int
	for i, t := range []*pgTarget{s.loaded, s.empty} {
		conn, err := pgx.Connect(ctx, t.url)
		if err != nil {
			return err
		}
		err = conn.QueryRow(ctx, indexes, postgres.DefaultSchema+".workflow_runs", postgres.DefaultSchema+".step_attempts").Scan(&n[i])
		if err == nil && t == s.loaded {
			var size int64
			err = conn.QueryRow(ctx, "SELECT pg_database_size(current_database())").Scan(&size)
			s.rep.Result.Metrics[MetricDatabaseBytes] = float64(size)
		}
		conn.Close(context.WithoutCancel(ctx))
		if err != nil {
			return err
		}
	}
	if n[0] != n[1] {
		return fmt.Errorf("it has %d indexes on workflow_runs and step_attempts, the migrations make %d: rebuild the missing ones first", n[0], n[1])
	}
	s.rep.Result.Metrics[MetricFinishedRuns] = float64(s.o.Finished)
	return s.restore(ctx)
}

// pgScaleLoad inserts runs $2…$3 (and 3 completed attempts each) into
// namespace $1: run i ≤ $4 finished at $5 + i ms (to be pruned), the
// others at $6 + (i − $4) × $7 µs; workflow scale-wf-<i mod $8>; every
// $9-th failed (its last attempt too). A run already there is left as it
// is, with its attempts, so the same statement refills a pruned range
// (restore). %[1]s is the schema.
const pgScaleLoad = `
WITH g AS (
  SELECT i, 'wrun_scale' || lpad(i::text, 10, '0') AS id,
    CASE WHEN i <= $4 THEN $5::timestamptz + i * INTERVAL '1 millisecond'
         ELSE $6::timestamptz + (i - $4) * $7::float8 * INTERVAL '1 microsecond' END AS t,
    CASE WHEN i %% $9 = 0 THEN 'failed' ELSE 'completed' END AS status
  FROM generate_series($2::bigint, $3::bigint) AS i
),
runs AS (
  INSERT INTO %[1]s.workflow_runs (namespace_id, id, workflow_name, status, config, input, output, error, attempts,
    worker_id, started_at, finished_at, created_at, updated_at)
  SELECT $1, g.id, 'scale-wf-' || (g.i %% $8), g.status, '{}', jsonb_build_object('i', g.i),
    CASE WHEN g.status = 'completed' THEN jsonb_build_object('i', g.i, 'sum', 3 * g.i + 3) END,
    CASE WHEN g.status = 'failed' THEN jsonb_build_object('message', 'step-2 failed') END, 1,
    'scale', g.t, g.t, g.t, g.t
  FROM g
  ON CONFLICT DO NOTHING
  RETURNING id
)
INSERT INTO %[1]s.step_attempts (namespace_id, id, workflow_run_id, step_name, kind, status, config, output, error,
  started_at, finished_at, created_at, updated_at)
SELECT $1, 'step_scale' || lpad(g.i::text, 10, '0') || '_' || k, g.id, 'step-' || k, 'function',
  CASE WHEN k = 2 AND g.status = 'failed' THEN 'failed' ELSE 'completed' END, '{}',
  CASE WHEN k = 2 AND g.status = 'failed' THEN NULL ELSE jsonb_build_object('i', g.i, 'k', k) END,
  CASE WHEN k = 2 AND g.status = 'failed' THEN jsonb_build_object('message', 'step-2 failed') END,
  g.t, g.t, g.t, g.t
FROM g JOIN runs ON runs.id = g.id CROSS JOIN generate_series(0, 2) AS k`

// checkCounts checks that CountWorkflowRuns of the loaded namespace
// counts want loaded finished runs (and W2's completed ones, once W2 has
// run), and nothing else.
func (s *scaleRun) checkCounts(ctx context.Context, want int) error {
	b, err := openBackendIn(ctx, Postgres, s.loaded.url, scaleNamespace)
	if err != nil {
		return err
	}
	defer b.Close()
	c, err := b.CountWorkflowRuns(ctx)
	if err != nil {
		return err
	}
	if c.Completed+c.Failed != want+s.w2Runs || c.Pending+c.Running+c.Canceled != 0 {
		return fmt.Errorf("the loaded namespace counts %d completed, %d failed, %d pending, %d running, %d canceled; want %d finished runs",
			c.Completed, c.Failed, c.Pending, c.Running, c.Canceled, want+s.w2Runs)
	}
	s.say("counts verified: %s completed, %s failed", thousands(c.Completed), thousands(c.Failed))
	return nil
}

// w1 measures W1 in namespace ns of t (see w1In) and says so.
func (s *scaleRun) w1(ctx context.Context, t *pgTarget, ns string) (float64, error) {
	m := &measurement{o: Options{Concurrency: s.o.Concurrency, Progress: s.o.Progress}, t: t, id: W1, label: "scale W1"}
	return m.w1In(ctx, ns, s.o.Runs)
}

// w2 is W2 in namespace scaleNamespace of t: n runs of bench-one, each
// started and awaited before the next, by an idle worker in this process
// through its backend; each output is checked as it returns. It returns
// the start-to-result latencies in ms.
func (s *scaleRun) w2(ctx context.Context, t *pgTarget, n int) ([]float64, error) {
	b, err := openBackendIn(ctx, Postgres, t.url, scaleNamespace)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	w, err := newWorker(b, W2, s.o.Concurrency, s.o.Progress, nil)
	if err == nil {
		err = w.Start(ctx)
	}
	if err != nil {
		return nil, err
	}
	c := ow.NewClient(b)
	lat := make([]float64, 0, n)
	for i := 0; i < n && err == nil; i++ {
		t0 := time.Now()
		var h *ow.Handle[Output]
		if h, err = oneStep.Start(ctx, c, Input{I: i}); err != nil {
			break
		}
		rctx, cancel := context.WithTimeout(ctx, resultTimeout)
		var out Output
		out, err = h.Result(rctx)
		cancel()
		lat = append(lat, ms(time.Since(t0)))
		if err == nil && out != expectedOutput(i, 1) {
			err = fmt.Errorf("run %s (input %d): Result returned %+v, want %+v", h.ID, i, out, expectedOutput(i, 1))
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancel()
	return lat, errors.Join(err, w.Stop(sctx))
}

// pages times ListWorkflowRuns with a status filter and a page of
// scalePage in the loaded namespace: completed and failed each walked
// from the newest page through scaleQueries pages (each page after the
// cursor of the one before, as a reader paging does), then the first
// page of running and of pending (no loaded run has either) scaleQueries/4
// times each. Every page is checked: full, of the status asked, newest
// first. It returns the latencies in ms.
func (s *scaleRun) pages(ctx context.Context) ([]float64, error) {
	b, err := openBackendIn(ctx, Postgres, s.loaded.url, scaleNamespace)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	var lat []float64
	for _, st := range []backend.RunStatus{backend.RunCompleted, backend.RunFailed} {
		after := ""
		for range scaleQueries {
			t0 := time.Now()
			page, err := b.ListWorkflowRuns(ctx, backend.ListWorkflowRunsParams{Status: st, Limit: scalePage, After: after})
			lat = append(lat, ms(time.Since(t0)))
			if err != nil {
				return lat, err
			}
			if err := checkPage(page.Data, st, scalePage); err != nil {
				return lat, err
			}
			if page.Next == nil {
				break // fewer runs than scaleQueries pages (a small --finished)
			}
			after = *page.Next
		}
	}
	for _, st := range []backend.RunStatus{backend.RunRunning, backend.RunPending} {
		for range scaleQueries / 4 {
			t0 := time.Now()
			page, err := b.ListWorkflowRuns(ctx, backend.ListWorkflowRunsParams{Status: st, Limit: scalePage})
			lat = append(lat, ms(time.Since(t0)))
			if err != nil {
				return lat, err
			}
			if len(page.Data) != 0 {
				return lat, fmt.Errorf("a page of %s runs lists %d runs; the loaded namespace has none", st, len(page.Data))
			}
		}
	}
	return lat, nil
}

// checkPage checks a page of a status-filtered list: n runs (or fewer on
// the last), each of status st, newest first.
func checkPage(runs []backend.WorkflowRun, st backend.RunStatus, n int) error {
	if len(runs) == 0 || len(runs) > n {
		return fmt.Errorf("a page of %s runs lists %d runs, want 1 to %d", st, len(runs), n)
	}
	for i, r := range runs {
		if r.Status.Normalize() != st {
			return fmt.Errorf("a page of %s runs lists run %s of status %s", st, r.ID, r.Status)
		}
		if i > 0 && r.CreatedAt.After(runs[i-1].CreatedAt) {
			return fmt.Errorf("a page of %s runs is not newest first at run %s", st, r.ID)
		}
	}
	return nil
}

// counts times CountWorkflowRuns of the loaded namespace scaleQueries
// times, each checked against the load, and returns the latencies in ms.
func (s *scaleRun) counts(ctx context.Context) ([]float64, error) {
	b, err := openBackendIn(ctx, Postgres, s.loaded.url, scaleNamespace)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	// W2 left its own runs in the namespace: count them once, untimed.
	base, err := b.CountWorkflowRuns(ctx)
	if err != nil {
		return nil, err
	}
	var lat []float64
	for range scaleQueries {
		t0 := time.Now()
		c, err := b.CountWorkflowRuns(ctx)
		lat = append(lat, ms(time.Since(t0)))
		if err != nil {
			return lat, err
		}
		if c != base || c.Failed != s.o.Finished/scaleFailedEvery {
			return lat, fmt.Errorf("CountWorkflowRuns = %+v, then %+v; want %d failed, unchanging", base, c, s.o.Finished/scaleFailedEvery)
		}
	}
	return lat, nil
}

// prune is R1 on the loaded database: W1 alone, then W1 while
// Client.PruneRuns deletes the runs that finished 60 days ago in the
// loaded namespace (30-day period, batches of 500, the Pruner's pause and
// o.PruneDuty), o.Pairs times; the prune is stopped between pairs (a
// stopped batch rolls back) and goes on where it was. A pair counts only
// if the prune was still running when its W1 ended. Then the rest is
// pruned without rests and exactly o.PruneRuns runs must be gone (W2's
// runs are newer and kept).
func (s *scaleRun) prune(ctx context.Context) error {
	m := s.rep.Result.Metrics
	old, err := openBackendIn(ctx, Postgres, s.loaded.url, scaleNamespace)
	if err != nil {
		return err
	}
	defer old.Close()
	c := ow.NewClient(old)
	retention := ow.Retention{Default: 30 * 24 * time.Hour}
	var slowdowns []float64
	deleted, active := 0, time.Duration(0)
	finished := false
	for i := 0; i < s.o.Pairs && !finished; i++ {
		a, err := s.w1(ctx, s.loaded, fmt.Sprintf("r1-alone-%d", i))
		if err != nil {
			return err
		}
		pctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		var rep ow.PruneReport
		var pruneErr error
		began := time.Now()
		wg.Add(1)
		go func() { // owned here: stopped and awaited below
			defer wg.Done()
			rep, pruneErr = c.PruneRuns(pctx, retention, ow.PruneOptions{Pause: ow.DefaultPrunePause, Duty: s.o.PruneDuty})
		}()
		d, err := s.w1(ctx, s.loaded, fmt.Sprintf("r1-during-%d", i))
		stop()
		wg.Wait()
		active += time.Since(began)
		deleted += rep.Deleted.Total()
		if err != nil {
			return err
		}
		switch {
		case pruneErr == nil:
			finished = true // the prune ended before W1: this pair does not count
			s.say("retention pair %d: the prune finished before W1 did; not counted", i+1)
		case errors.Is(pruneErr, context.Canceled):
			slowdowns = append(slowdowns, 1-d/a)
			s.say("retention pair %d: W1 %.0f runs/s alone, %.0f while pruning (%s runs pruned so far)", i+1, a, d, thousands(deleted))
		default:
			return fmt.Errorf("prune: %w", pruneErr)
		}
	}
	rest := time.Now()
	rep, err := c.PruneRuns(ctx, retention, ow.PruneOptions{})
	if err != nil {
		return fmt.Errorf("prune the rest: %w", err)
	}
	if got := deleted + rep.Deleted.Total(); got != s.o.PruneRuns {
		return fmt.Errorf("the prune deleted %d runs, want the %d that finished 60 days ago", got, s.o.PruneRuns)
	}
	s.say("the last %s runs pruned without rests in %.1f s", thousands(rep.Deleted.Total()), time.Since(rest).Seconds())
	if active > 0 {
		m[MetricPrunedPerS] = float64(deleted) / active.Seconds()
	}
	if len(slowdowns) == 0 {
		s.pruneNote = fmt.Sprintf("the prune of %d runs finished before W1 did: raise --finished or --prune-runs", s.o.PruneRuns)
		return nil
	}
	m[MetricSlowdown] = median(slowdowns)
	return nil
}

// checks are the figures against their targets.
func (s *scaleRun) checks() []Check {
	m := s.rep.Result.Metrics
	c := func(name, what string, target float64, atMost bool, note string) Check {
		v, ok := m[name]
		if !ok && note == "" {
			note = "not measured"
		}
		return Check{Name: name, What: what, Value: v, Measured: ok, Target: target, AtMost: atMost, Note: note}
	}
	return []Check{
		c(MetricW1Ratio, "W1 runs/s, loaded ÷ empty", TargetW1Ratio, false, ""),
		c(MetricP99, "W2 start-to-result p99, ms", TargetW2P99Ms, true, ""),
		c(MetricPageP99, fmt.Sprintf("a page of %d with a status filter, p99, ms", scalePage), TargetPageP99Ms, true, ""),
		c(MetricCountP99, "run counts (CountWorkflowRuns), p99, ms", TargetCountP99Ms, true, ""),
		c(MetricSlowdown, fmt.Sprintf("W1 slowed while pruning %s runs", thousands(s.o.PruneRuns)), TargetPruneSlowdn, true, s.pruneNote),
	}
}

// WriteScaleText writes the report as text: where, the load, and each
// figure with its target and pass or FAIL.
func WriteScaleText(w io.Writer, r *ScaleReport) error {
	m := r.Result.Metrics
	fmt.Fprintf(w, "ow bench scale: %s finished runs (%s pruned), commit %s, %s, %d CPUs, PostgreSQL %s, load average %s → %s\n",
		thousands(r.Options.Finished), thousands(r.Options.PruneRuns), orUnknown(r.Env.Commit), r.Env.CPU, r.Env.CPUs,
		r.Env.PostgresVersion, orUnknown(r.Env.LoadStart), orUnknown(r.Env.LoadEnd))
	if _, ok := m[MetricLoadSeconds]; ok {
		fmt.Fprintf(w, "load %.0f s (%.0f runs/s), index rebuild %.0f s, VACUUM ANALYZE %.0f s, database %.1f GB\n",
			m[MetricLoadSeconds], m[MetricFinishedRuns]/m[MetricLoadSeconds], m[MetricIndexSeconds], m[MetricAnalyzeSecs], m[MetricDatabaseBytes]/1e9)
	}
	if _, ok := m[MetricRunsPerS]; ok {
		fmt.Fprintf(w, "W1 runs/s: empty %s, loaded %s (median of %d each)\n", rate(m[MetricEmptyRunsPerS]), rate(m[MetricRunsPerS]), r.Options.Pairs)
	}
	if _, ok := m[MetricEmptyP99]; ok {
		fmt.Fprintf(w, "W2 p99: empty %.1f ms, loaded %.1f ms\n", m[MetricEmptyP99], m[MetricP99])
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tvalue\ttarget\t")
	for _, c := range r.Checks {
		format := func(v float64) string { return fmt.Sprintf("%.2f", v) }
		if c.Name == MetricSlowdown {
			format = func(v float64) string { return fmt.Sprintf("%.1f %%", 100*v) }
		}
		value, verdict := "-", "FAIL"
		if c.Measured {
			value = format(c.Value)
		}
		if c.Pass() {
			verdict = "pass"
		}
		if c.Note != "" {
			verdict += " (" + c.Note + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.What, value, c.targetText(format), verdict)
	}
	return tw.Flush()
}

// WriteScaleJSON writes the report as one JSON object on one line: the
// result's fields and metrics (as the other workloads' lines), then
// "targets": each figure's value, target, bound ("max" or "min") and
// pass, and the databases when kept.
func WriteScaleJSON(w io.Writer, r *ScaleReport) error {
	line, err := r.Result.MarshalJSON()
	if err != nil {
		return err
	}
	type target struct {
		Value  *float64 `json:"value"`
		Target float64  `json:"target"`
		Bound  string   `json:"bound"`
		Pass   bool     `json:"pass"`
		Note   string   `json:"note,omitempty"`
	}
	targets := map[string]target{}
	for _, c := range r.Checks {
		t := target{Target: c.Target, Bound: "min", Pass: c.Pass(), Note: c.Note}
		if c.AtMost {
			t.Bound = "max"
		}
		if c.Measured {
			v := c.Value
			t.Value = &v
		}
		targets[c.Name] = t
	}
	tb, err := json.Marshal(targets)
	if err != nil {
		return err
	}
	out := slices.Clone(line[:len(line)-1])
	out = append(out, `,"prune_runs":`...)
	out = fmt.Appendf(out, "%d", r.Options.PruneRuns)
	out = append(out, `,"targets":`...)
	out = append(out, tb...)
	if r.Options.Keep {
		kb, _ := json.Marshal([]string{r.Loaded, r.Empty})
		out = append(out, `,"databases":`...)
		out = append(out, kb...)
	}
	out = append(out, '}', '\n')
	_, err = w.Write(out)
	return err
}
