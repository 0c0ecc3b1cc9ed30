package crash

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// The limited workflow: one step, "hold", that counts itself in and out
// of a table of the test's own (limitCounters) while it holds, so that
// the test reads the most steps that ever ran at once per key and in all.
// Its input is the run's concurrency key.
var (
	limitedSpec     = ow.Spec{Name: "crashtest-limited"}
	limitedWorkflow = ow.Declare[string, string](limitedSpec)
)

// stepHold is the limited workflow's step.
const stepHold = "hold"

// allKeys is the counter row of every key together.
const allKeys = "*"

// limitedConfig is the limited workflow of a worker process.
type limitedConfig struct {
	// Limits are the workflow's limits, as its Spec declares them.
	Limits ow.Limits `json:"limits"`
	// Counter says where limitCounters is: Kind "postgres" (DSN the URL,
	// Schema the test's schema) or "sqlite" (DSN a file of the test's).
	Counter counterTarget `json:"counter"`
	// Hold is how long each step holds; with Block the step holds until
	// its context ends (the process is killed first).
	Hold  time.Duration `json:"hold"`
	Block bool          `json:"block"`
}

type counterTarget struct {
	Kind, DSN, Schema string
}

// limitCounters counts the running steps: running now and the peak, per
// concurrency key and for allKeys. Each step adds one to its key's row and
// to allKeys' in one atomic statement (the rows are locked, or SQLite's
// database is, while it updates them), so a peak is exact.
type limitCounters struct {
	t  counterTarget
	pg *pgxpool.Pool
	db *sql.DB
}

func openCounters(ctx context.Context, t counterTarget) (*limitCounters, error) {
	c := &limitCounters{t: t}
	var err error
	switch t.Kind {
	case "postgres":
		c.pg, err = pgxpool.New(ctx, t.DSN)
	case "sqlite":
		c.db, err = sql.Open("sqlite", "file:"+t.DSN+"?_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)")
	default:
		err = fmt.Errorf("unknown counter kind %q", t.Kind)
	}
	return c, err
}

func (c *limitCounters) table() string {
	if c.pg != nil {
		return pgx.Identifier{c.t.Schema, "limit_counters"}.Sanitize()
	}
	return "limit_counters"
}

func (c *limitCounters) exec(ctx context.Context, q string, args ...any) error {
	if c.pg != nil {
		_, err := c.pg.Exec(ctx, q, args...)
		return err
	}
	_, err := c.db.ExecContext(ctx, q, args...)
	return err
}

// create makes the table with a zero row for each key and allKeys.
func (c *limitCounters) create(ctx context.Context, keys ...string) error {
	if err := c.exec(ctx, `CREATE TABLE `+c.table()+` (key TEXT PRIMARY KEY, running INTEGER NOT NULL, peak INTEGER NOT NULL)`); err != nil {
		return err
	}
	for _, k := range append(keys, allKeys) {
		if err := c.exec(ctx, `INSERT INTO `+c.table()+` (key, running, peak) VALUES ($1, 0, 0)`, k); err != nil {
			return err
		}
	}
	return nil
}

// add adds d to the running count of key and allKeys, raising their peaks.
func (c *limitCounters) add(ctx context.Context, key string, d int) error {
	max := "GREATEST"
	if c.db != nil {
		max = "MAX"
	}
	return c.exec(ctx, `UPDATE `+c.table()+` SET running = running + $1, peak = `+max+`(peak, running + $1) WHERE key IN ($2, $3)`, d, key, allKeys)
}

// peaks returns the peak of every row.
func (c *limitCounters) peaks(ctx context.Context) (map[string]int, error) {
	q := `SELECT key, peak FROM ` + c.table()
	out := map[string]int{}
	if c.pg != nil {
		rows, err := c.pg.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			var n int
			if err := rows.Scan(&k, &n); err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, rows.Err()
	}
	rows, err := c.db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			return nil, err
		}
		out[k] = n
	}
	return out, rows.Err()
}

func (c *limitCounters) close() {
	if c.pg != nil {
		c.pg.Close()
	}
	if c.db != nil {
		_ = c.db.Close()
	}
}

// newLimitedDefinition is the limited workflow as a worker process
// registers it, and a function closing its counters.
func newLimitedDefinition(ctx context.Context, r *stepRecorder, cfg limitedConfig) (ow.Definition, func(), error) {
	counters, err := openCounters(ctx, cfg.Counter)
	if err != nil {
		return nil, nil, err
	}
	spec := limitedSpec
	spec.Limits = cfg.Limits
	def := ow.Define(spec, func(ctx ow.Context, key string) (string, error) {
		runID := ctx.RunInfo().ID
		return ow.Run(ctx, stepHold, func(ctx context.Context) (string, error) {
			if err := r.log.step(eventStart, runID, stepHold); err != nil {
				return "", err
			}
			defer func() { _ = r.log.step(eventEnd, runID, stepHold) }()
			if err := counters.add(ctx, key, 1); err != nil {
				return "", err
			}
			defer func() { _ = counters.add(context.WithoutCancel(ctx), key, -1) }()
			hold := time.After(cfg.Hold)
			if cfg.Block {
				hold = nil
			}
			select {
			case <-ctx.Done():
				return "", context.Cause(ctx)
			case <-hold:
			}
			return "held " + key, nil
		})
	})
	return def, counters.close, nil
}

// limitsTarget is a backend target and a counter table beside it.
type limitsTarget struct {
	target
	counter counterTarget
}

func limitsTargets(t *testing.T) []func(t *testing.T) limitsTarget {
	return []func(t *testing.T) limitsTarget{
		func(t *testing.T) limitsTarget {
			tg := sqliteTarget(t)
			return limitsTarget{tg, counterTarget{Kind: "sqlite", DSN: filepath.Join(t.TempDir(), "counters.db")}}
		},
		func(t *testing.T) limitsTarget {
			tg := postgresTarget(t)
			return limitsTarget{tg, counterTarget{Kind: "postgres", DSN: tg.dsn, Schema: tg.schema}}
		},
	}
}

// setUpLimits opens the target's client, creates the counter table for
// keys, and stores the limits (as a worker would when it starts) so that
// runs started before any worker process is up already wait for
// admission.
func setUpLimits(t *testing.T, tg limitsTarget, l ow.Limits, keys ...string) (*ow.Client, *limitCounters) {
	t.Helper()
	client := tg.open(t)
	ctx := t.Context()
	counters, err := openCounters(ctx, tg.counter)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(counters.close)
	if err := counters.create(ctx, keys...); err != nil {
		t.Fatalf("create the counter table: %v", err)
	}
	if _, err := client.Backend().(backend.LimitStore).PutWorkflowLimits(ctx, limitedSpec.Name, l.Stored()); err != nil {
		t.Fatal(err)
	}
	return client, counters
}

func limitsWorkerConfig(tg limitsTarget, stepLog string, l ow.Limits, hold time.Duration) workerConfig {
	return workerConfig{
		Backend: tg.kind, DSN: tg.dsn, Schema: tg.schema, Namespace: tg.namespace, StepLog: stepLog,
		Concurrency: 4, LeaseDuration: 20 * time.Second, HeartbeatInterval: time.Second,
		MaxPollInterval: 100 * time.Millisecond, ShutdownGrace: 5 * time.Second,
		Limited: &limitedConfig{Limits: l, Counter: tg.counter, Hold: hold},
	}
}

// startReady starts worker processes with cfg and waits until each logged
// that it is ready.
func startReady(t *testing.T, stepLog string, cfgs ...workerConfig) []*workerProcess {
	t.Helper()
	var ps []*workerProcess
	for _, cfg := range cfgs {
		ps = append(ps, startWorkerProcess(t, cfg))
	}
	waitFor(t, time.Minute, "the worker processes to be ready", func() (bool, error) {
		for _, p := range ps {
			if p.exited() {
				return false, fmt.Errorf("worker process %d exited: %v\n%s", p.pid(), p.cmd.ProcessState, p.tail(20))
			}
		}
		events, err := readStepLog(stepLog)
		ready := readyPIDs(events)
		for _, p := range ps {
			if !ready[p.pid()] {
				return false, err
			}
		}
		return true, err
	})
	return ps
}

// startLimited starts one run of the limited workflow with key.
func startLimited(t *testing.T, c *ow.Client, key string) string {
	t.Helper()
	h, err := limitedWorkflow.Start(t.Context(), c, key, ow.WithConcurrencyKey(key))
	if err != nil {
		t.Fatalf("start a run with key %s: %v", key, err)
	}
	if h.Run.QueuedAt == nil {
		t.Fatalf("run %s of the limited workflow does not wait for admission", h.ID)
	}
	return h.ID
}

// waitCompleted waits until every run of ids completed.
func waitCompleted(t *testing.T, c *ow.Client, timeout time.Duration, ids ...string) []*backend.WorkflowRun {
	t.Helper()
	runs := make([]*backend.WorkflowRun, len(ids))
	waitFor(t, timeout, fmt.Sprintf("%d runs to complete", len(ids)), func() (bool, error) {
		for i, id := range ids {
			r, err := c.GetRun(t.Context(), id)
			if err != nil {
				return false, err
			}
			if r.Status.Terminal() && r.Status != backend.RunCompleted {
				return false, fmt.Errorf("run %s %s: %s", id, r.Status, r.Error)
			}
			if r.Status != backend.RunCompleted {
				return false, nil
			}
			runs[i] = r
		}
		return true, nil
	})
	return runs
}

// Three worker processes never exceed a workflow's global and per-key
// concurrency limits, and reach them (so the limits, not a lack of work,
// kept the counts down).
func TestLimitsHoldAcrossThreeWorkerProcesses(t *testing.T) {
	t.Parallel()
	for _, mk := range limitsTargets(t) {
		tg := mk(t)
		t.Run(tg.kind, func(t *testing.T) {
			t.Parallel()
			limits := ow.Limits{Concurrency: 5, ConcurrencyPerKey: 2}
			keys := []string{"k0", "k1", "k2", "k3"}
			client, counters := setUpLimits(t, tg, limits, keys...)
			// Queued two of a key at a time (k0 k0 k1 k1 …), so that a key's
			// pair is admitted together once slots free up: started one key
			// after another, a key could reach its limit only if the
			// window of five admitted runs happened to begin at it, and
			// one in a few runs left a key at 1 (flaky, not a breach).
			var ids []string
			for i := range 40 {
				ids = append(ids, startLimited(t, client, keys[(i/2)%len(keys)]))
			}
			stepLog := filepath.Join(t.TempDir(), "steps.log")
			// Each step holds long enough (40 runs take 3 s at the limit,
			// 4 s on one worker) that the processes, ready up to a second
			// apart on a loaded machine, all take part.
			cfg := limitsWorkerConfig(tg, stepLog, limits, 400*time.Millisecond)
			startReady(t, stepLog, cfg, cfg, cfg) // 12 slots against a global limit of 5
			waitCompleted(t, client, 3*time.Minute, ids...)

			peaks, err := counters.peaks(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("most steps running at once: %v", peaks)
			if peaks[allKeys] != limits.Concurrency {
				t.Errorf("at most %d steps ran at once in all, want the global limit %d", peaks[allKeys], limits.Concurrency)
			}
			for _, k := range keys {
				if peaks[k] != limits.ConcurrencyPerKey {
					t.Errorf("key %s: at most %d steps ran at once, want the per-key limit %d", k, peaks[k], limits.ConcurrencyPerKey)
				}
			}
			events, err := readStepLog(stepLog)
			if err != nil {
				t.Fatal(err)
			}
			pids := map[int]bool{}
			for _, ev := range events {
				if ev.Kind == eventStart {
					pids[ev.PID] = true
				}
			}
			if len(pids) < 2 {
				t.Errorf("only %d of the 3 worker processes executed steps", len(pids))
			}
		})
	}
}

// Three worker processes admit at most RateLimit runs of a key within any
// window of RatePeriod (the admission times are the database's), and keep
// admitting at about that rate.
func TestRateLimitHoldsAcrossThreeWorkerProcesses(t *testing.T) {
	t.Parallel()
	for _, mk := range limitsTargets(t) {
		tg := mk(t)
		t.Run(tg.kind, func(t *testing.T) {
			t.Parallel()
			const n = 16
			limits := ow.Limits{RateLimit: 4, RatePeriod: time.Second}
			client, _ := setUpLimits(t, tg, limits, "k")
			var ids []string
			for range n {
				ids = append(ids, startLimited(t, client, "k"))
			}
			stepLog := filepath.Join(t.TempDir(), "steps.log")
			cfg := limitsWorkerConfig(tg, stepLog, limits, 10*time.Millisecond)
			startReady(t, stepLog, cfg, cfg, cfg)
			runs := waitCompleted(t, client, 2*time.Minute, ids...)

			var admitted []time.Time
			for _, r := range runs {
				if r.AdmittedAt == nil {
					t.Fatalf("run %s completed without an admission time", r.ID)
				}
				admitted = append(admitted, *r.AdmittedAt)
			}
			slices.SortFunc(admitted, func(a, b time.Time) int { return a.Compare(b) })
			for i := 0; i+limits.RateLimit < len(admitted); i++ {
				if span := admitted[i+limits.RateLimit].Sub(admitted[i]); span < limits.RatePeriod {
					t.Errorf("admissions %d to %d within %v: %d in less than the period %v", i, i+limits.RateLimit, span, limits.RateLimit+1, limits.RatePeriod)
				}
			}
			// Liveness: n/4 periods, plus a poll interval per period and
			// slack for a loaded machine.
			total := admitted[len(admitted)-1].Sub(admitted[0])
			t.Logf("%d admissions over %v (the limit allows them in %v)", n, total, time.Duration(n/limits.RateLimit-1)*limits.RatePeriod)
			if max := time.Duration(n/limits.RateLimit-1)*limits.RatePeriod + 3*time.Second; total > max {
				t.Errorf("%d admissions took %v, more than %v: the rate limit held them back too long", n, total, max)
			}
		})
	}
}

// A worker process killed with SIGKILL while it executes an admitted run
// holds the key's slot until the run's lease expires; then another worker
// process takes the run over in that slot, and the key's other runs follow
// one at a time. No run of the key executes beside another at any moment.
func TestKilledWorkerProcessHoldingAnAdmittedRun(t *testing.T) {
	t.Parallel()
	for _, mk := range limitsTargets(t) {
		tg := mk(t)
		t.Run(tg.kind, func(t *testing.T) {
			t.Parallel()
			const lease = 2 * time.Second
			limits := ow.Limits{ConcurrencyPerKey: 1}
			client, counters := setUpLimits(t, tg, limits, "k")
			stepLog := filepath.Join(t.TempDir(), "steps.log")
			cfg := limitsWorkerConfig(tg, stepLog, limits, 100*time.Millisecond)
			cfg.LeaseDuration, cfg.HeartbeatInterval = lease, 200*time.Millisecond
			blocking := cfg
			blocked := *cfg.Limited
			blocked.Block = true
			blocking.Limited = &blocked

			first := startReady(t, stepLog, blocking)[0]
			held := startLimited(t, client, "k")
			waitFor(t, time.Minute, "the first run's step to start in the first process", func() (bool, error) {
				events, err := readStepLog(stepLog)
				return slices.ContainsFunc(events, func(e logEvent) bool {
					return e.Kind == eventStart && e.RunID == held && e.PID == first.pid()
				}), err
			})
			second := startReady(t, stepLog, cfg)[0]
			others := []string{startLimited(t, client, "k"), startLimited(t, client, "k")}

			// Both processes poll every 100 ms; in a second, the second
			// would have taken one of the others if the slot were free.
			time.Sleep(time.Second)
			events, err := readStepLog(stepLog)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range events {
				if e.Kind == eventStart && e.RunID != held {
					t.Fatalf("run %s started while run %s held the key's only slot", e.RunID, held)
				}
			}
			state, err := first.signalAndWait(syscall.SIGKILL, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			if ws, ok := state.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("first worker process ended with %v, want killed by SIGKILL", state)
			}
			// The killed step cannot count itself out: the test does, for it.
			if err := counters.add(t.Context(), "k", -1); err != nil {
				t.Fatal(err)
			}

			runs := waitCompleted(t, client, 2*time.Minute, append([]string{held}, others...)...)
			if runs[0].Attempts != 2 || !runs[0].AdmittedAt.Before(*runs[1].AdmittedAt) {
				t.Errorf("the held run: attempts %d admitted %v; want taken over once (2 claims) in its first admission, before the others' %v",
					runs[0].Attempts, runs[0].AdmittedAt, runs[1].AdmittedAt)
			}
			events, err = readStepLog(stepLog)
			if err != nil {
				t.Fatal(err)
			}
			var takeover stepExecution
			for _, ex := range executions(events)[stepKey{held, stepHold}] {
				if ex.PID == second.pid() {
					takeover = ex
				}
			}
			if takeover.Start.IsZero() || takeover.Start.Before(killed) {
				t.Fatalf("the held run's step was not taken over by the second process after the kill: %+v", executions(events)[stepKey{held, stepHold}])
			}
			if wait := takeover.Start.Sub(killed); wait > lease+3*time.Second {
				t.Errorf("the held run was taken over %v after the kill, more than its lease %v and a few polls", wait, lease)
			}
			t.Logf("taken over %v after the kill (lease %v)", takeover.Start.Sub(killed), lease)
			// Every execution of the key's steps, the killed one ending at
			// the kill: none overlaps another.
			var all []stepExecution
			for k, execs := range executions(events) {
				if k.Key != stepHold {
					continue
				}
				for _, ex := range execs {
					if ex.End.IsZero() && ex.PID == first.pid() {
						ex.End = killed
					}
					all = append(all, ex)
				}
			}
			if o := overlapping(all); len(o) > 0 {
				t.Errorf("steps of one key ran at once: %v", o)
			}
			peaks, err := counters.peaks(t.Context())
			if err != nil || peaks["k"] != 1 {
				t.Errorf("peak of steps running at once for key k = %d, %v; want 1", peaks["k"], err)
			}
		})
	}
}
