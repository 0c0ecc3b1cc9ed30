package crash

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// The event-triggered workflows of the worker processes: every
// crash.order event starts one run of eventEvery, and one of eventEven
// when its n is even.
var (
	eventEverySpec = ow.Spec{Name: "crashtest-event-every", Triggers: []ow.EventTrigger{{Event: "crash.order"}}}
	eventEvenSpec  = ow.Spec{Name: "crashtest-event-even", Triggers: []ow.EventTrigger{{Event: "crash.order", If: "int(event.data.n) % 2 == 0"}}}
)

type crashEvent struct {
	Data struct {
		N int `json:"n"`
	} `json:"data"`
}

func newEventDefinitions(r *stepRecorder) []ow.Definition {
	body := func(ctx ow.Context, in crashEvent) (int, error) {
		a, err := run(ctx, r, "first", func() int { return in.Data.N + 1 })
		if err != nil {
			return 0, err
		}
		return run(ctx, r, "second", func() int { return a * 2 })
	}
	return []ow.Definition{ow.Define(eventEverySpec, body), ow.Define(eventEvenSpec, body)}
}

const crashEvents = 1000

// TestEventsStartExactlyOneRunPerTriggerWhileAWorkerIsKilled publishes
// 1,000 events from two concurrent publishers (every event twice, with
// its idempotency key: one publisher one at a time, the other in
// batches) while three worker processes execute the triggered runs and
// one of them is killed with SIGKILL; each event must start exactly one
// run of each workflow whose trigger matches, and every run complete.
func TestEventsStartExactlyOneRunPerTriggerWhileAWorkerIsKilled(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) { testEventsWhileKilled(t, sqliteTarget(t)) })
	t.Run("postgres", func(t *testing.T) { testEventsWhileKilled(t, postgresTarget(t)) })
}

func testEventsWhileKilled(t *testing.T, tg target) {
	client := tg.open(t)
	stepLog := t.TempDir() + "/steps.log"
	cfg := workerConfig{
		Backend: tg.kind, DSN: tg.dsn, Schema: tg.schema, Namespace: tg.namespace, StepLog: stepLog, StepWork: time.Millisecond,
		Concurrency: 8, LeaseDuration: 5 * time.Second, HeartbeatInterval: time.Second,
		MaxPollInterval: 250 * time.Millisecond, ShutdownGrace: 5 * time.Second, Events: true,
	}
	workers := make([]*workerProcess, 3)
	for i := range workers {
		workers[i] = startWorkerProcess(t, cfg)
	}
	waitFor(t, time.Minute, "the worker processes to be ready", func() (bool, error) {
		events, err := readStepLog(stepLog)
		return len(readyPIDs(events)) == len(workers), err
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	var wg sync.WaitGroup
	errs := make(chan error, 2)
	event := func(i int) ow.Event {
		return ow.Event{Name: "crash.order", Data: map[string]int{"n": i}, IdempotencyKey: fmt.Sprintf("order-%d", i)}
	}
	wg.Add(2)
	go func() { // one at a time, in order
		defer wg.Done()
		for i := 0; i < crashEvents; i++ {
			if _, err := client.PublishEvents(ctx, []ow.Event{event(i)}); err != nil {
				errs <- fmt.Errorf("publish %d: %w", i, err)
				return
			}
		}
	}()
	go func() { // in batches of 25, from the end
		defer wg.Done()
		for hi := crashEvents; hi > 0; hi -= 25 {
			var batch []ow.Event
			for i := hi - 25; i < hi; i++ {
				batch = append(batch, event(i))
			}
			if _, err := client.PublishEvents(ctx, batch); err != nil {
				errs <- fmt.Errorf("publish batch below %d: %w", hi, err)
				return
			}
		}
	}()
	// Kill a worker while the publishers are at work and the workers
	// execute triggered runs.
	waitFor(t, 3*time.Minute, "10 triggered runs to complete", func() (bool, error) {
		c, err := client.CountRuns(ctx)
		return c.Completed >= 10, err
	})
	if state, err := workers[0].signalAndWait(syscall.SIGKILL, 30*time.Second); err != nil {
		t.Fatal(err)
	} else if ws, ok := state.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("worker ended with %v, want killed by SIGKILL", state)
	}
	if page, err := client.ListEvents(ctx, backend.ListEventsParams{Limit: 1}); err == nil && len(page.Data) == 1 {
		t.Logf("killed worker %d after %d events were stored", workers[0].pid(), page.Data[0].Seq)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := crashEvents + crashEvents/2
	waitFor(t, 3*time.Minute, fmt.Sprintf("all %d triggered runs to finish", want), func() (bool, error) {
		c, err := client.CountRuns(ctx)
		return c.Completed+c.Failed+c.Canceled >= want, err
	})

	// Every event once; every (event, workflow) one run.
	events := map[string]int{} // event id → n
	var after string
	for {
		page, err := client.ListEvents(ctx, backend.ListEventsParams{Limit: backend.MaxPageSize, After: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Data {
			var n int
			if _, err := fmt.Sscanf(*e.IdempotencyKey, "order-%d", &n); err != nil {
				t.Fatal(err)
			}
			events[e.ID] = n
		}
		if page.Next == nil {
			break
		}
		after = *page.Next
	}
	if len(events) != crashEvents {
		t.Fatalf("%d events stored, want %d (each published twice with its idempotency key)", len(events), crashEvents)
	}
	runs := map[string]int{} // idempotency key → runs
	var cursor string
	total := 0
	for {
		page, err := client.ListRuns(ctx, backend.ListWorkflowRunsParams{Limit: backend.MaxPageSize, After: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Data {
			total++
			if r.Status.Normalize() != backend.RunCompleted {
				t.Errorf("run %s of %s is %s", r.ID, r.WorkflowName, r.Status)
			}
			if r.IdempotencyKey == nil || !strings.HasPrefix(*r.IdempotencyKey, "event:") {
				t.Errorf("run %s has idempotency key %v", r.ID, r.IdempotencyKey)
				continue
			}
			runs[*r.IdempotencyKey]++
		}
		if page.Next == nil {
			break
		}
		cursor = *page.Next
	}
	if total != want {
		t.Errorf("%d runs, want %d", total, want)
	}
	for id, n := range events {
		for _, wf := range []string{eventEverySpec.Name, eventEvenSpec.Name} {
			got := runs[backend.EventRunIdempotencyKey(id, wf)]
			expect := 1
			if wf == eventEvenSpec.Name && n%2 != 0 {
				expect = 0
			}
			if got != expect {
				t.Errorf("event %s (n=%d) started %d runs of %s, want %d", id, n, got, wf, expect)
			}
		}
	}
}
