package failover

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
)

// count is acknowledged vs found writes of one kind.
type count struct{ acked, found int }

func (c count) lost() int { return c.acked - c.found }

// report is what verify found.
type report struct {
	starts, steps, hooks, chunks count
	schedule                     count
	// doubleDB: steps with two completed attempts stored; doubleAfterAck:
	// executions of a step begun after its result was read back durable.
	doubleDB, doubleAfterAck int
	// reexecs: executions beyond the first of a step whose earlier
	// results were never recorded (at-least-once: a pass cut off before
	// its commit, or a commit whose answer was lost); staleChunks: chunks
	// of such executions still visible to readers.
	reexecs, staleChunks int
	notCompleted         int
	inFlight             int
	maxStall, medStall   time.Duration
	ticksAfter           int
}

func (r report) log(t *testing.T) {
	t.Helper()
	line := func(what string, c count) {
		t.Logf("  %-28s acknowledged %6d   found %6d   lost %d", what, c.acked, c.found, c.lost())
	}
	line("runs started", r.starts)
	line("step results", r.steps)
	line("hook payloads delivered", r.hooks)
	line("stream chunks appended", r.chunks)
	line("schedule put", r.schedule)
	t.Logf("  double completions: %d stored twice, %d executed after their result was durable", r.doubleDB, r.doubleAfterAck)
	t.Logf("  re-executions of steps whose result was never recorded (at-least-once): %d; their chunks still visible: %d", r.reexecs, r.staleChunks)
	t.Logf("  acknowledged runs not completed: %d", r.notCompleted)
	t.Logf("  runs in flight at the kill: %d; first progress after the primary was writable: median %.2f s, max %.2f s",
		r.inFlight, r.medStall.Seconds(), r.maxStall.Seconds())
	t.Logf("  schedule ticks started after the failover: %d", r.ticksAfter)
	for _, c := range []struct {
		what string
		c    count
	}{{"started runs", r.starts}, {"step results", r.steps}, {"hook payloads", r.hooks}, {"chunks", r.chunks}, {"schedules", r.schedule}} {
		if c.c.lost() != 0 {
			t.Errorf("%d acknowledged %s lost", c.c.lost(), c.what)
		}
		if c.c.acked == 0 {
			t.Errorf("no %s acknowledged: the load did not exercise them", c.what)
		}
	}
	if r.doubleDB != 0 || r.doubleAfterAck != 0 {
		t.Errorf("double completions: %d stored, %d after ack", r.doubleDB, r.doubleAfterAck)
	}
	if r.staleChunks != 0 {
		t.Errorf("%d chunks of executions whose result was not recorded are visible", r.staleChunks)
	}
	if r.notCompleted != 0 {
		t.Errorf("%d acknowledged runs did not complete", r.notCompleted)
	}
	if r.ticksAfter == 0 {
		t.Errorf("the schedule started no run after the failover")
	}
}

// verify reads the new primary and compares it with the ack logs.
func verify(t *testing.T, ctx context.Context, pool *pgxpool.Pool, b *postgres.Backend, schema string,
	acks []record, killAt, writableAt time.Time) report {
	t.Helper()
	var rep report
	type runRow struct {
		status            string
		out               loadOutput
		created           time.Time
		finished          *time.Time
		firstAfterWrite   *time.Time
		inFlightAtTheKill bool
	}
	rows, err := pool.Query(ctx, fmt.Sprintf(`
SELECT r.id, r.status, coalesce(r.output::text, 'null'), r.created_at, r.finished_at,
       (SELECT min(greatest(s.created_at, s.updated_at)) FROM %[1]q.step_attempts s
         WHERE s.namespace_id = r.namespace_id AND s.workflow_run_id = r.id AND greatest(s.created_at, s.updated_at) >= $1)
FROM %[1]q.workflow_runs r WHERE r.workflow_name = 'failover-load'`, schema), writableAt)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]*runRow{}
	for rows.Next() {
		var id, out string
		r := &runRow{}
		if err := rows.Scan(&id, &r.status, &out, &r.created, &r.finished, &r.firstAfterWrite); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal([]byte(out), &r.out)
		runs[id] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	// The recorded results of the steps: run/step -> the nonce output.
	recorded := map[string]string{}
	srows, err := pool.Query(ctx, fmt.Sprintf(`SELECT workflow_run_id, step_name, output #>> '{}' FROM %q.step_attempts
WHERE status = 'completed' AND step_name IN ('a', 'b') AND jsonb_typeof(output) = 'string'`, schema))
	if err != nil {
		t.Fatal(err)
	}
	for srows.Next() {
		var run, step, out string
		if err := srows.Scan(&run, &step, &out); err != nil {
			t.Fatal(err)
		}
		recorded[run+"/"+step] = out
	}
	if err := srows.Err(); err != nil {
		t.Fatal(err)
	}

	execs := map[string][]record{} // run/step -> executions
	ackAt := map[string]int64{}    // run/step -> first ack
	for _, a := range acks {
		key := a.Run + "/" + a.Step
		switch a.Kind {
		case "start":
			rep.starts.acked++
			r, ok := runs[a.Run]
			if ok {
				rep.starts.found++
				if r.status != string(backend.RunCompleted) {
					rep.notCompleted++
				}
			}
		case "schedule":
			rep.schedule.acked++
		case "exec":
			execs[key] = append(execs[key], a)
		case "ack":
			if _, seen := ackAt[key]; !seen {
				ackAt[key] = a.At
				rep.steps.acked++
				if recorded[key] == a.Nonce {
					rep.steps.found++
				}
			}
		case "hook":
			rep.hooks.acked++
			if r, ok := runs[a.Run]; ok && r.out.Hook == a.I {
				rep.hooks.found++
			}
		}
	}
	// Step b's result is acknowledged by the run's completion: found if
	// the output names an execution of it.
	for id, r := range runs {
		if r.status != string(backend.RunCompleted) {
			continue
		}
		rep.steps.acked++
		if recorded[id+"/b"] == r.out.B {
			rep.steps.found++
		}
	}
	for key, es := range execs {
		rep.reexecs += len(es) - 1
		if at, ok := ackAt[key]; ok {
			for _, e := range es {
				if e.At > at {
					rep.doubleAfterAck++
				}
			}
		}
	}

	// Chunks: every acknowledged chunk of the recorded execution is
	// visible; none of another execution is.
	visible := map[string]map[string]bool{}
	for id, r := range runs {
		if r.status != string(backend.RunCompleted) {
			continue
		}
		visible[id] = map[string]bool{}
		after := int64(0)
		for {
			cs, done, err := b.ReadStream(ctx, backend.ReadStreamParams{WorkflowRunID: id, Stream: "out", AfterSeq: after})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cs {
				visible[id][string(c.Data)] = true
				if !strings.HasPrefix(string(c.Data), r.out.A+"/") {
					rep.staleChunks++
				}
				after = c.Seq
			}
			if done || len(cs) == 0 {
				break
			}
		}
	}
	for _, a := range acks {
		if a.Kind != "chunk" {
			continue
		}
		r, ok := runs[a.Run]
		if !ok || r.status != string(backend.RunCompleted) || r.out.A != a.Nonce {
			continue // an execution whose result was not recorded: its chunks are dropped
		}
		rep.chunks.acked++
		if visible[a.Run][fmt.Sprintf("%s/%d", a.Nonce, a.Seq)] {
			rep.chunks.found++
		}
	}

	if err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM (
SELECT 1 FROM %q.step_attempts WHERE status = 'completed' GROUP BY namespace_id, workflow_run_id, step_name HAVING count(*) > 1) d`, schema)).Scan(&rep.doubleDB); err != nil {
		t.Fatal(err)
	}
	var schedules int
	if err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %q.workflow_schedules WHERE name = $1`, schema), scheduleName).Scan(&schedules); err != nil {
		t.Fatal(err)
	}
	rep.schedule.found = min(schedules, rep.schedule.acked)
	if err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %q.workflow_runs WHERE workflow_name = 'failover-tick' AND created_at > $1`, schema), writableAt).Scan(&rep.ticksAfter); err != nil {
		t.Fatal(err)
	}

	// Stalls: each run in flight at the kill (created before it, not
	// finished before it) moves again (a step attempt written, or the run
	// finished) some time after the new primary was writable.
	var stalls []time.Duration
	for id, r := range runs {
		if !r.created.Before(killAt) || (r.finished != nil && r.finished.Before(killAt)) {
			continue
		}
		rep.inFlight++
		moved := r.finished
		if r.firstAfterWrite != nil && (moved == nil || r.firstAfterWrite.Before(*moved)) {
			moved = r.firstAfterWrite
		}
		stall := time.Hour
		if moved != nil {
			stall = max(0, moved.Sub(writableAt))
		}
		if stall > recoveryTarget {
			t.Logf("run %s (status %s) in flight at the kill moved again only %v after the primary was writable", id, r.status, stall)
		}
		stalls = append(stalls, stall)
	}
	if len(stalls) > 0 {
		slices.Sort(stalls)
		rep.medStall, rep.maxStall = stalls[len(stalls)/2], stalls[len(stalls)-1]
	}
	return rep
}
