package crash

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
)

// TestWorkerProcessKilledMidUpdateHandler kills (SIGKILL) a worker process
// while an update's handler runs; a second process handles the update
// once more and settles it once: one completed handler step, one result
// for the caller, and the validator, whose acceptance the running row of
// the handler's step recorded, not asked again.
func TestWorkerProcessKilledMidUpdateHandler(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		target func(*testing.T) target
	}{
		{"on a SQLite file shared by the processes", sqliteTarget},
		{"on PostgreSQL", postgresTarget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tg := tc.target(t)
			client := tg.open(t)
			stepLog := filepath.Join(t.TempDir(), "steps.log")
			cfg := workerConfig{
				Backend: tg.kind, DSN: tg.dsn, Schema: tg.schema, Namespace: tg.namespace, StepLog: stepLog,
				Concurrency: 1, LeaseDuration: crashLease, HeartbeatInterval: crashHeartbeat,
				MaxPollInterval: 250 * time.Millisecond, ShutdownGrace: crashGrace,
			}
			blocking := cfg
			blocking.BlockStep = updateHandlerKey
			first := startWorkerProcess(t, blocking)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			h, err := updatableWorkflow.Start(ctx, client, 20)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.AdmitUpdate(ctx, h.ID, updateName, 5, ow.WithUpdateID("u1")); err != nil {
				t.Fatal(err)
			}
			// The handler blocks in the first process; its step's running
			// row (written after RunningStepAfter) is the acceptance.
			waitFor(t, time.Minute, "the first worker to run the handler and record its running row", func() (bool, error) {
				events, err := readStepLog(stepLog)
				if err != nil {
					return false, err
				}
				started := false
				for _, ev := range events {
					started = started || (ev.Kind == eventStart && ev.Key == updateHandlerKey && ev.PID == first.pid())
				}
				if !started {
					return false, nil
				}
				attempts, err := listSteps(ctx, client, h.ID)
				if err != nil {
					return false, err
				}
				for _, a := range attempts {
					if a.StepName == "__update:add:u1" {
						return true, nil
					}
				}
				return false, nil
			})
			if _, err := first.signalAndWait(syscall.SIGKILL, 30*time.Second); err != nil {
				t.Fatal(err)
			}
			second := startWorkerProcess(t, cfg)
			res, err := ow.Update[int](ctx, client, h.ID, updateName, 5, ow.WithUpdateID("u1"))
			if err != nil || res != 25 {
				t.Fatalf("the update's caller got %d, %v; want 25", res, err)
			}
			if _, err := client.SignalRun(ctx, h.ID, "stop", 1, ""); err != nil {
				t.Fatal(err)
			}
			waitFinished(ctx, client, h.ID)
			events, err := readStepLog(stepLog)
			if err != nil {
				t.Fatal(err)
			}
			execs := executions(events)
			handler := execs[stepKey{h.ID, updateHandlerKey}]
			var byFirst, bySecond int
			for _, e := range handler {
				switch e.PID {
				case first.pid():
					byFirst++
				case second.pid():
					bySecond++
				}
			}
			if byFirst != 1 || bySecond != 1 {
				t.Errorf("the handler ran %d times in the first process and %d in the second (%v); want once each (the first killed in it)", byFirst, bySecond, handler)
			}
			if v := execs[stepKey{h.ID, updateValidatorKey}]; len(v) != 1 || v[0].PID != first.pid() {
				t.Errorf("the validator ran %v; want once, in the first process", v)
			}
			attempts, err := listSteps(ctx, client, h.ID)
			if err != nil {
				t.Fatal(err)
			}
			var completed []string
			for _, a := range attempts {
				if strings.HasPrefix(a.StepName, "__update:") && a.Status == "completed" {
					completed = append(completed, a.StepName)
				}
			}
			if len(completed) != 1 {
				t.Errorf("completed update steps %v; want exactly one", completed)
			}
			u, err := client.GetUpdate(ctx, h.ID, "u1")
			if err != nil || u.State != "completed" || string(u.Result) != "25" {
				t.Errorf("the update as stored: %+v, %v; want completed 25", u, err)
			}
			if _, err := second.signalAndWait(syscall.SIGTERM, crashGrace+10*time.Second); err != nil {
				t.Fatal(err)
			}
		})
	}
}
