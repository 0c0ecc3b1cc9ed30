// Package failover kills the primary of a real PostgreSQL HA formation
// (pg_auto_failover: monitor, primary, synchronous standby, built by
// paf.sh) under a load of worker and client processes, and checks that
// every acknowledged write survived the promotion of the standby, that no
// step completed twice, and how long runs stalled. run.sh builds the
// formation, runs TestPrimaryFailover against it and tears it down;
// without OW_FAILOVER_URL the test skips. See docs/production-postgres.md.
package failover

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
)

// Environment run.sh sets: the multi-host URL of the formation, its base
// folder, and the paf.sh that kills its primary.
const (
	envURL    = "OW_FAILOVER_URL"
	envBase   = "OW_FAILOVER_BASE"
	envScript = "OW_FAILOVER_PAF"
)

// The load's shape. The lease (4 s) is shorter than the outage (about
// 8 s), on purpose: every lease held at the kill expires before the new
// primary is writable.
const (
	workers     = 2
	concurrency = 8
	lease       = 4 * time.Second
	heartbeat   = time.Second
	// maxPoll is long, so that a worker that only polled would be seen:
	// wake-ups must come from NOTIFY (or the listener's reconnection).
	maxPoll    = 5 * time.Second
	startEvery = 50 * time.Millisecond
	// recoveryTarget is the stall after promotion the test accepts for any
	// run in flight at the kill (the aim is 10 s).
	recoveryTarget = 10 * time.Second
)

// TestProcess is not a test: it is the body of the worker and client
// processes TestPrimaryFailover starts by re-executing this binary.
func TestProcess(t *testing.T) {
	raw := os.Getenv(roleEnv)
	if raw == "" {
		t.Skip("runs only as a process started by TestPrimaryFailover")
	}
	var cfg processConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	if err := runProcess(cfg); err != nil {
		t.Fatalf("%s process %d: %v", cfg.Role, os.Getpid(), err)
	}
}

// proc is a process of the load.
type proc struct {
	cmd  *exec.Cmd
	out  string
	done chan struct{} // closed when the process exited
	err  error         // its exit error, set before done is closed
}

func startProcess(t *testing.T, dir string, name string, cfg processConfig) *proc {
	t.Helper()
	raw, _ := json.Marshal(cfg)
	out := filepath.Join(dir, name+".out")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestProcess$", "-test.v", "-test.timeout", "0")
	cmd.Env = append(os.Environ(), roleEnv+"="+string(raw))
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// stop sends SIGTERM and waits for a clean exit within d.
func (p *proc) stop(t *testing.T, name string, d time.Duration) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.err != nil {
			t.Errorf("%s exited with %v; its output:\n%s", name, p.err, tail(p.out, 40))
		}
	case <-time.After(d):
		t.Errorf("%s did not stop within %v; its output:\n%s", name, d, tail(p.out, 40))
	}
}

// alive reports whether the process is still running (no restart is
// allowed: a process that exited is a failure).
func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func tail(path string, n int) string {
	raw, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// event is an event a test subscriber saw, with when.
type event struct {
	at time.Time
	e  backend.Event
}

func TestPrimaryFailover(t *testing.T) {
	url, base, script := os.Getenv(envURL), os.Getenv(envBase), os.Getenv(envScript)
	if url == "" || base == "" || script == "" {
		t.Skipf("needs a pg_auto_failover formation: run test/failover/run.sh (it sets %s, %s and %s)", envURL, envBase, envScript)
	}
	ctx := t.Context()
	schema := fmt.Sprintf("failover_%d", time.Now().UnixNano())
	b, err := postgres.Open(ctx, url, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	dir := t.TempDir()

	// A subscriber on its own backend (its own listener), fed by writes
	// from another backend: what it sees came by NOTIFY.
	sub, err := postgres.Open(ctx, url, postgres.Options{Schema: schema, SkipMigrations: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var evMu sync.Mutex
	var events []event
	evCh, err := sub.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for e := range evCh {
			evMu.Lock()
			events = append(events, event{time.Now(), e})
			evMu.Unlock()
		}
	}()

	cfg := processConfig{URL: url, Schema: schema, Lease: lease, Heartbeat: heartbeat, MaxPoll: maxPoll,
		Concurrency: concurrency, StartEvery: startEvery}
	var ws []*proc
	for i := range workers {
		c := cfg
		c.Role, c.AckLog = "worker", filepath.Join(dir, fmt.Sprintf("worker%d.log", i))
		ws = append(ws, startProcess(t, dir, fmt.Sprintf("worker%d", i), c))
	}
	c := cfg
	c.Role, c.AckLog = "client", filepath.Join(dir, "client.log")
	client := startProcess(t, dir, "client", c)

	completed := func() int {
		var n int
		if err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %q.workflow_runs WHERE workflow_name = 'failover-load' AND status = 'completed'`, schema)).Scan(&n); err != nil {
			return -1
		}
		return n
	}
	// Warm up: runs in every phase (steps, sleeps, hooks) at the kill.
	waitFor(t, 90*time.Second, "30 completed runs before the kill", func() bool { return completed() >= 30 })
	time.Sleep(time.Second)

	killAt := time.Now()
	out, err := exec.Command(script, "kill-primary", base).CombinedOutput()
	if err != nil {
		t.Fatalf("kill the primary: %v: %s", err, out)
	}
	t.Logf("killed the primary (port %s) with kill -9 of its postmaster and pg_autoctl", strings.TrimSpace(string(out)))
	// Writable: a new connection through the multi-host URL commits a
	// transaction with an id. (A pooled connection would not do: a backend
	// of the killed postmaster may answer for a moment.)
	var writableAt time.Time
	waitFor(t, 90*time.Second, "the new primary to accept a write", func() bool {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(cctx, url)
		if err != nil {
			return false
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(cctx, "SELECT txid_current()"); err != nil {
			return false
		}
		writableAt = time.Now()
		return true
	})
	outage := writableAt.Sub(killAt)
	t.Logf("writable again through the multi-host URL %.2f s after the kill", outage.Seconds())

	// The listener's reconnection: its catch-up event (no run id).
	var relistenAt time.Time
	waitFor(t, 30*time.Second, "the subscriber's listener to reconnect", func() bool {
		evMu.Lock()
		defer evMu.Unlock()
		for _, e := range events {
			if e.at.After(killAt) && e.e.Kind == backend.EventWorkAvailable && e.e.WorkflowRunID == "" {
				relistenAt = e.at
				return true
			}
		}
		return false
	})

	// Load goes on for a while on the new primary.
	time.Sleep(8 * time.Second)
	for i, w := range ws {
		if !w.alive() {
			t.Fatalf("worker %d exited after the failover (no restart allowed):\n%s", i, tail(w.out, 40))
		}
	}
	if !client.alive() {
		t.Fatalf("the client exited after the failover:\n%s", tail(client.out, 40))
	}

	// NOTIFY after the failover: a start by another backend reaches the
	// subscriber in milliseconds.
	wr, err := postgres.Open(ctx, url, postgres.Options{Schema: schema, SkipMigrations: true})
	if err != nil {
		t.Fatal(err)
	}
	defer wr.Close()
	var notifyLat []time.Duration
	for range 10 {
		t0 := time.Now()
		r, err := wr.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "failover-notify-probe", Config: json.RawMessage("{}")})
		if err != nil {
			t.Fatal(err)
		}
		var got time.Time
		waitFor(t, 10*time.Second, "the probe's notification", func() bool {
			evMu.Lock()
			defer evMu.Unlock()
			for _, e := range events {
				if e.e.WorkflowRunID == r.ID {
					got = e.at
					return true
				}
			}
			return false
		})
		notifyLat = append(notifyLat, got.Sub(t0))
		time.Sleep(100 * time.Millisecond)
	}

	client.stop(t, "client", 3*time.Minute)
	acks := readLogs(t, dir)
	var started []string
	for _, r := range acks {
		if r.Kind == "start" {
			started = append(started, r.Run)
		}
	}
	waitFor(t, 3*time.Minute, "every acknowledged start to finish", func() bool {
		var n int
		err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %q.workflow_runs WHERE id = ANY($1) AND status IN ('completed', 'failed', 'canceled')`, schema), started).Scan(&n)
		return err == nil && n == len(started)
	})

	// Idle workers pick a new run up by NOTIFY: with the schedule paused and
	// maxPoll 5 s, a poll would take seconds.
	oc := ow.NewClient(wr)
	if _, err := oc.PauseSchedule(ctx, scheduleName); err != nil {
		t.Fatal(err)
	}
	var pickup []time.Duration
	for i := range 5 {
		time.Sleep(1500 * time.Millisecond)
		t0 := time.Now()
		h, err := oc.StartByName(ctx, "failover-ping", "", i)
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err = h.Result(rctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		pickup = append(pickup, time.Since(t0))
	}
	for i, w := range ws {
		w.stop(t, fmt.Sprintf("worker %d", i), time.Minute)
	}

	rep := verify(t, ctx, pool, wr, schema, readLogs(t, dir), killAt, writableAt)
	slices.Sort(notifyLat)
	slices.Sort(pickup)
	t.Logf("FAILOVER RESULT")
	t.Logf("  outage (kill -9 to first write through the multi-host URL): %.2f s", outage.Seconds())
	t.Logf("  subscriber re-LISTENed %.2f s after the kill (%.2f s after writable)", relistenAt.Sub(killAt).Seconds(), relistenAt.Sub(writableAt).Seconds())
	t.Logf("  NOTIFY latency after failover (10 starts by another backend): median %v, max %v", notifyLat[len(notifyLat)/2], notifyLat[len(notifyLat)-1])
	t.Logf("  idle worker start-to-result after failover (5 runs, max poll %v): median %v, max %v", maxPoll, pickup[len(pickup)/2], pickup[len(pickup)-1])
	rep.log(t)
	if rep.maxStall > recoveryTarget {
		t.Errorf("a run in flight at the kill stalled %v after the new primary was writable (target %v)", rep.maxStall, recoveryTarget)
	}
	if pickup[len(pickup)/2] > time.Second {
		t.Errorf("idle workers took a median %v to pick a run up after the failover: a poll, not a NOTIFY", pickup[len(pickup)/2])
	}
	if notifyLat[len(notifyLat)-1] > 2*time.Second {
		t.Errorf("a notification after the failover took %v", notifyLat[len(notifyLat)-1])
	}
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readLogs(t *testing.T, dir string) []record {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	var out []record
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		s := bufio.NewScanner(f)
		for s.Scan() {
			var r record
			if err := json.Unmarshal(s.Bytes(), &r); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			out = append(out, r)
		}
		f.Close()
	}
	slices.SortFunc(out, func(a, b record) int { return int(a.At - b.At) })
	return out
}
