package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// fakeClock is an injected clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// openTest opens a backend on a fresh file, closed when the test ends.
func openTest(t *testing.T, clock *fakeClock) (*Backend, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sub", "ow.db")
	return openAt(t, path, clock, true), path
}

// openAt opens another backend on path; share=false stands for another
// process (own in-process lock and hub).
func openAt(t *testing.T, path string, clock *fakeClock, share bool) *Backend {
	t.Helper()
	opts := Options{}
	if clock != nil {
		opts.Now = clock.Now
	}
	b, err := open(t.Context(), path, opts, share)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func mustCreate(t *testing.T, b *Backend, p backend.CreateWorkflowRunParams) *backend.WorkflowRun {
	t.Helper()
	if p.WorkflowName == "" {
		p.WorkflowName = "wf"
	}
	r, err := b.CreateWorkflowRun(t.Context(), p)
	if err != nil {
		t.Fatalf("CreateWorkflowRun: %v", err)
	}
	return r
}

func mustClaim(t *testing.T, b *Backend, lease time.Duration, workers ...string) []*backend.WorkflowRun {
	t.Helper()
	runs, err := b.ClaimWorkflowRuns(t.Context(), backend.ClaimWorkflowRunsParams{WorkerIDs: workers, LeaseDuration: lease})
	if err != nil {
		t.Fatalf("ClaimWorkflowRuns: %v", err)
	}
	return runs
}

func ids(runs []*backend.WorkflowRun) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

func TestOpenCreatesTheSchemaAtVersionFive(t *testing.T) {
	b, path := openTest(t, nil)
	rows, err := b.db.QueryContext(t.Context(), `SELECT "version" FROM "openworkflow_migrations" ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var versions []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	if fmt.Sprint(versions) != "[0 1 2 3 4 5]" {
		t.Fatalf("versions = %v, want [0 1 2 3 4 5]", versions)
	}
	var mode string
	if err := b.db.QueryRowContext(t.Context(), "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
	// Reopening applies nothing and keeps the data.
	r := mustCreate(t, b, backend.CreateWorkflowRunParams{})
	b2 := openAt(t, path, nil, false)
	if _, err := b2.GetWorkflowRun(t.Context(), r.ID); err != nil {
		t.Fatalf("reopened backend lost run: %v", err)
	}
}

func TestConcurrentOpenersOfAFreshFileMigrateOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fresh.db")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := open(context.Background(), path, Options{}, false)
			if err != nil {
				errs <- err
				return
			}
			_, err = b.CreateWorkflowRun(context.Background(), backend.CreateWorkflowRunParams{WorkflowName: "wf"})
			errs <- errors.Join(err, b.Close())
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent open: %v", err)
		}
	}
}

func TestClaimOrdersPendingFirstThenAvailableAtThenCreatedAt(t *testing.T) {
	clock := newFakeClock()
	b, _ := openTest(t, clock)
	t0 := clock.Now()

	// A parked run due long ago, then pending runs due at different times.
	parked := mustCreate(t, b, backend.CreateWorkflowRunParams{AvailableAt: ptr(t0.Add(-time.Hour))})
	if got := mustClaim(t, b, time.Minute, "w0"); len(got) != 1 || got[0].ID != parked.ID {
		t.Fatalf("claimed %v, want %s", ids(got), parked.ID)
	}
	if err := b.SleepWorkflowRun(t.Context(), backend.SleepWorkflowRunParams{WorkflowRunID: parked.ID, WorkerID: "w0", AvailableAt: t0.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	late := mustCreate(t, b, backend.CreateWorkflowRunParams{AvailableAt: ptr(t0.Add(-time.Minute))})
	clock.Advance(time.Millisecond)
	early := mustCreate(t, b, backend.CreateWorkflowRunParams{AvailableAt: ptr(t0.Add(-2 * time.Minute))})
	clock.Advance(time.Millisecond)
	now1 := mustCreate(t, b, backend.CreateWorkflowRunParams{AvailableAt: ptr(t0)})
	clock.Advance(time.Millisecond)
	now2 := mustCreate(t, b, backend.CreateWorkflowRunParams{AvailableAt: ptr(t0)})
	future := mustCreate(t, b, backend.CreateWorkflowRunParams{AvailableAt: ptr(t0.Add(time.Hour))})

	got := mustClaim(t, b, time.Minute, "a", "b", "c", "d", "e", "f")
	want := []string{early.ID, late.ID, now1.ID, now2.ID, parked.ID}
	if fmt.Sprint(ids(got)) != fmt.Sprint(want) {
		t.Fatalf("claim order = %v, want %v (future run %s must wait)", ids(got), want, future.ID)
	}
	for i, r := range got {
		w := []string{"a", "b", "c", "d", "e"}[i]
		if r.WorkerID == nil || *r.WorkerID != w || r.Status != backend.RunRunning {
			t.Fatalf("run %d: worker %v status %s, want %s running", i, r.WorkerID, r.Status, w)
		}
		if !r.AvailableAt.Equal(clock.Now().Add(time.Minute)) {
			t.Fatalf("run %d: available_at %v, want now+lease", i, r.AvailableAt)
		}
	}
}

func TestFencingAfterTheLeaseMoves(t *testing.T) {
	clock := newFakeClock()
	b, _ := openTest(t, clock)
	r := mustCreate(t, b, backend.CreateWorkflowRunParams{})
	mustClaim(t, b, time.Second, "old")
	step, err := b.CreateStepAttempt(t.Context(), backend.CreateStepAttemptParams{WorkflowRunID: r.ID, WorkerID: "old", StepName: "s", Kind: backend.StepFunction})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	if got := mustClaim(t, b, time.Minute, "new"); len(got) != 1 || got[0].Attempts != 2 {
		t.Fatalf("reclaim = %+v, want the run with attempts 2", got)
	}

	checks := map[string]error{}
	_, checks["complete run"] = b.CompleteWorkflowRun(t.Context(), backend.CompleteWorkflowRunParams{WorkflowRunID: r.ID, WorkerID: "old"})
	_, checks["fail run"] = b.FailWorkflowRun(t.Context(), backend.FailWorkflowRunParams{WorkflowRunID: r.ID, WorkerID: "old", Error: json.RawMessage(`{}`)})
	_, checks["reschedule"] = b.RescheduleWorkflowRunAfterFailedStepAttempt(t.Context(), backend.RescheduleWorkflowRunParams{WorkflowRunID: r.ID, WorkerID: "old", AvailableAt: clock.Now()})
	checks["extend"] = b.ExtendWorkflowRunLease(t.Context(), backend.ExtendWorkflowRunLeaseParams{WorkflowRunID: r.ID, WorkerID: "old", LeaseDuration: time.Minute})
	checks["sleep"] = b.SleepWorkflowRun(t.Context(), backend.SleepWorkflowRunParams{WorkflowRunID: r.ID, WorkerID: "old", AvailableAt: clock.Now()})
	_, checks["create step"] = b.CreateStepAttempt(t.Context(), backend.CreateStepAttemptParams{WorkflowRunID: r.ID, WorkerID: "old", StepName: "t", Kind: backend.StepFunction})
	_, checks["complete step"] = b.CompleteStepAttempt(t.Context(), backend.CompleteStepAttemptParams{WorkflowRunID: r.ID, StepAttemptID: step.ID, WorkerID: "old"})
	_, checks["fail step"] = b.FailStepAttempt(t.Context(), backend.FailStepAttemptParams{WorkflowRunID: r.ID, StepAttemptID: step.ID, WorkerID: "old"})
	for name, err := range checks {
		if !errors.Is(err, backend.ErrNotOwner) {
			t.Errorf("%s by the old owner: err = %v, want ErrNotOwner", name, err)
		}
	}
	if _, err := b.CompleteStepAttempt(t.Context(), backend.CompleteStepAttemptParams{WorkflowRunID: r.ID, StepAttemptID: step.ID, WorkerID: "new", Output: json.RawMessage(`1`)}); err != nil {
		t.Fatalf("new owner completes the step: %v", err)
	}
	if _, err := b.CompleteWorkflowRun(t.Context(), backend.CompleteWorkflowRunParams{WorkflowRunID: r.ID, WorkerID: "missing-run"}); !errors.Is(err, backend.ErrNotOwner) {
		t.Fatalf("err = %v", err)
	}
	if _, err := b.CompleteWorkflowRun(t.Context(), backend.CompleteWorkflowRunParams{WorkflowRunID: "wrun_nope", WorkerID: "new"}); !errors.Is(err, backend.ErrRunNotFound) {
		t.Fatalf("complete a missing run: err = %v, want ErrRunNotFound", err)
	}
}

func TestKeyedCreateUnderConcurrencyReturnsOneRun(t *testing.T) {
	b, path := openTest(t, nil)
	other := openAt(t, path, nil, false) // as another process
	const n = 10
	got := make([]string, 2*n)
	var wg sync.WaitGroup
	for i := range 2 * n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			be := b
			if i%2 == 1 {
				be = other
			}
			r, err := be.CreateWorkflowRun(context.Background(), backend.CreateWorkflowRunParams{WorkflowName: "wf", IdempotencyKey: ptr("k")})
			if err != nil {
				t.Errorf("create %d: %v", i, err)
				return
			}
			got[i] = r.ID
		}()
	}
	wg.Wait()
	for _, id := range got {
		if id != got[0] {
			t.Fatalf("keyed creates returned several runs: %v", got)
		}
	}
	counts, err := b.CountWorkflowRuns(t.Context())
	if err != nil || counts.Pending != 1 {
		t.Fatalf("counts = %+v, %v; want one pending run", counts, err)
	}
}

func TestIdempotencyWindowFollowsTheInjectedClock(t *testing.T) {
	clock := newFakeClock()
	b, _ := openTest(t, clock)
	first := mustCreate(t, b, backend.CreateWorkflowRunParams{IdempotencyKey: ptr("k")})
	clock.Advance(backend.IdempotencyPeriod)
	if again := mustCreate(t, b, backend.CreateWorkflowRunParams{IdempotencyKey: ptr("k")}); again.ID != first.ID {
		t.Fatalf("at exactly 24 h the key must still dedupe")
	}
	clock.Advance(time.Millisecond)
	if fresh := mustCreate(t, b, backend.CreateWorkflowRunParams{IdempotencyKey: ptr("k")}); fresh.ID == first.ID {
		t.Fatalf("after 24 h the key must create a new run")
	}
}

func TestSignalsFanOutOncePerWait(t *testing.T) {
	b, _ := openTest(t, nil)
	ctxJSON := json.RawMessage(`{"kind":"signal-wait","signal":"go","timeoutAt":"2999-01-01T00:00:00.000Z"}`)
	var waits []*backend.StepAttempt
	var runs []string
	for i := range 2 {
		r := mustCreate(t, b, backend.CreateWorkflowRunParams{})
		w := fmt.Sprint("w", i)
		mustClaim(t, b, time.Hour, w)
		a, err := b.CreateStepAttempt(t.Context(), backend.CreateStepAttemptParams{WorkflowRunID: r.ID, WorkerID: w, StepName: "wait", Kind: backend.StepSignalWait, Context: ctxJSON})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 { // the first run parks; the second keeps its worker
			if err := b.SleepWorkflowRun(t.Context(), backend.SleepWorkflowRunParams{WorkflowRunID: r.ID, WorkerID: w, AvailableAt: time.Now().Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
		waits = append(waits, a)
		runs = append(runs, r.ID)
	}
	sort.Strings(runs)

	if got, err := b.SendSignal(t.Context(), backend.SendSignalParams{Signal: "other"}); err != nil || len(got) != 0 || got == nil {
		t.Fatalf("signal without waiters = %#v, %v; want empty non-nil", got, err)
	}
	got, err := b.SendSignal(t.Context(), backend.SendSignalParams{Signal: "go", Data: json.RawMessage(`{"n":1}`), IdempotencyKey: ptr("once")})
	sort.Strings(got)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(runs) {
		t.Fatalf("SendSignal = %v, %v; want %v", got, err, runs)
	}
	again, err := b.SendSignal(t.Context(), backend.SendSignalParams{Signal: "go", Data: json.RawMessage(`2`), IdempotencyKey: ptr("once")})
	sort.Strings(again)
	if err != nil || fmt.Sprint(again) != fmt.Sprint(runs) {
		t.Fatalf("repeated keyed send = %v, %v; want %v", again, err, runs)
	}
	if second, err := b.SendSignal(t.Context(), backend.SendSignalParams{Signal: "go", Data: json.RawMessage(`3`)}); err != nil || len(second) != 0 {
		t.Fatalf("second send = %v, %v; want no delivery (one per wait)", second, err)
	}
	for _, w := range waits {
		data, ok, err := b.GetSignalDelivery(t.Context(), w.ID)
		if err != nil || !ok || string(data) != `{"n":1}` {
			t.Fatalf("delivery of %s = %s, %v, %v", w.ID, data, ok, err)
		}
	}
	parked, _ := b.GetWorkflowRun(t.Context(), waits[0].WorkflowRunID)
	if parked.AvailableAt.After(time.Now()) {
		t.Fatalf("parked waiter was not woken: available_at %v", parked.AvailableAt)
	}
	owned, _ := b.GetWorkflowRun(t.Context(), waits[1].WorkflowRunID)
	if !owned.AvailableAt.After(time.Now().Add(30 * time.Minute)) {
		t.Fatalf("owned waiter's lease was touched: available_at %v", owned.AvailableAt)
	}
}

func TestTwoBackendsOnOneFileShareWakeUps(t *testing.T) {
	client, path := openTest(t, nil)
	worker := openAt(t, path, nil, true)
	events, err := worker.Subscribe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r := mustCreate(t, client, backend.CreateWorkflowRunParams{})
	waitEvent(t, events, backend.Event{Kind: backend.EventWorkAvailable})
	mustClaim(t, worker, time.Hour, "w")
	if _, err := worker.CompleteWorkflowRun(t.Context(), backend.CompleteWorkflowRunParams{WorkflowRunID: r.ID, WorkerID: "w"}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, backend.Event{Kind: backend.EventRunFinished, WorkflowRunID: r.ID})
}

func waitEvent(t *testing.T, ch <-chan backend.Event, want backend.Event) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case e := <-ch:
			if e == want {
				return
			}
		case <-timeout:
			t.Fatalf("no event %+v within 5 s", want)
		}
	}
}

func TestConcurrentClaimersOnSeparateHandlesNeverDoubleClaim(t *testing.T) {
	a, path := openTest(t, nil)
	b := openAt(t, path, nil, false)
	const runs = 60
	for range runs {
		mustCreate(t, a, backend.CreateWorkflowRunParams{})
	}
	var mu sync.Mutex
	seen := map[string]string{}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			be := a
			if g%2 == 1 {
				be = b
			}
			for {
				w1, w2 := fmt.Sprintf("g%d-a", g), fmt.Sprintf("g%d-b", g)
				got, err := be.ClaimWorkflowRuns(context.Background(), backend.ClaimWorkflowRunsParams{WorkerIDs: []string{w1, w2}, LeaseDuration: time.Hour})
				if err != nil {
					t.Errorf("claimer %d: %v", g, err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, r := range got {
					if prev, dup := seen[r.ID]; dup {
						t.Errorf("run %s claimed twice (%s, then %s)", r.ID, prev, *r.WorkerID)
					}
					seen[r.ID] = *r.WorkerID
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != runs {
		t.Fatalf("claimed %d runs, want %d", len(seen), runs)
	}
}

func TestDeadlineSweepFailsRunsAndWakesParkedParents(t *testing.T) {
	clock := newFakeClock()
	b, _ := openTest(t, clock)
	events, _ := b.Subscribe(t.Context())
	parent := mustCreate(t, b, backend.CreateWorkflowRunParams{WorkflowName: "parent"})
	mustClaim(t, b, time.Hour, "pw")
	step, err := b.CreateStepAttempt(t.Context(), backend.CreateStepAttemptParams{WorkflowRunID: parent.ID, WorkerID: "pw", StepName: "child", Kind: backend.StepWorkflow})
	if err != nil {
		t.Fatal(err)
	}
	ns := b.NamespaceID()
	child := mustCreate(t, b, backend.CreateWorkflowRunParams{WorkflowName: "child", ParentStepAttemptNamespaceID: &ns, ParentStepAttemptID: &step.ID,
		AvailableAt: ptr(clock.Now().Add(time.Hour)), DeadlineAt: ptr(clock.Now().Add(time.Minute))})
	if _, err := b.SetStepAttemptChildWorkflowRun(t.Context(), backend.SetStepAttemptChildWorkflowRunParams{WorkflowRunID: parent.ID, StepAttemptID: step.ID, WorkerID: "pw", ChildWorkflowRunNamespaceID: ns, ChildWorkflowRunID: child.ID}); err != nil {
		t.Fatal(err)
	}
	if err := b.SleepWorkflowRun(t.Context(), backend.SleepWorkflowRunParams{WorkflowRunID: parent.ID, WorkerID: "pw", AvailableAt: clock.Now().Add(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	got := mustClaim(t, b, time.Hour, "x")
	if len(got) != 1 || got[0].ID != parent.ID {
		t.Fatalf("claimed %v, want the woken parent %s", ids(got), parent.ID)
	}
	c, _ := b.GetWorkflowRun(t.Context(), child.ID)
	if c.Status != backend.RunFailed || string(c.Error) != string(backend.DeadlineExceededError) {
		t.Fatalf("child = %s %s, want failed with the deadline error", c.Status, c.Error)
	}
	waitEvent(t, events, backend.Event{Kind: backend.EventRunFinished, WorkflowRunID: child.ID})
}

func TestLegacyStatusesReadAsCurrentOnes(t *testing.T) {
	clock := newFakeClock()
	b, _ := openTest(t, clock)
	sleeping := mustCreate(t, b, backend.CreateWorkflowRunParams{})
	done := mustCreate(t, b, backend.CreateWorkflowRunParams{AvailableAt: ptr(clock.Now().Add(time.Hour))})
	for id, status := range map[string]string{sleeping.ID: "sleeping", done.ID: "succeeded"} {
		if _, err := b.db.ExecContext(t.Context(), `UPDATE "workflow_runs" SET "status" = ? WHERE "id" = ?`, status, id); err != nil {
			t.Fatal(err)
		}
	}
	counts, err := b.CountWorkflowRuns(t.Context())
	if err != nil || counts.Running != 1 || counts.Completed != 1 {
		t.Fatalf("counts = %+v, %v", counts, err)
	}
	page, err := b.ListWorkflowRuns(t.Context(), backend.ListWorkflowRunsParams{Status: backend.RunRunning})
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != sleeping.ID || page.Data[0].Status != backend.RunRunning {
		t.Fatalf("list running = %+v, %v", page, err)
	}
	if _, err := b.CancelWorkflowRun(t.Context(), done.ID); !errors.Is(err, backend.ErrRunTerminal) {
		t.Fatalf("cancel succeeded run: err = %v, want ErrRunTerminal", err)
	}
	if got := mustClaim(t, b, time.Minute, "w"); len(got) != 1 || got[0].ID != sleeping.ID {
		t.Fatalf("claimed %v, want the sleeping run", ids(got))
	}
}

func TestPaginationFollowsOpenWorkflow(t *testing.T) {
	clock := newFakeClock()
	b, _ := openTest(t, clock)
	var all []string
	for range 5 {
		r := mustCreate(t, b, backend.CreateWorkflowRunParams{})
		all = append([]string{r.ID}, all...) // newest first
		clock.Advance(time.Millisecond)
	}
	list := func(p backend.ListWorkflowRunsParams) *backend.Page[backend.WorkflowRun] {
		t.Helper()
		page, err := b.ListWorkflowRuns(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		return page
	}
	pageIDs := func(p *backend.Page[backend.WorkflowRun]) []string {
		var out []string
		for _, r := range p.Data {
			out = append(out, r.ID)
		}
		return out
	}
	p1 := list(backend.ListWorkflowRunsParams{Limit: 2})
	if fmt.Sprint(pageIDs(p1)) != fmt.Sprint(all[:2]) || p1.Next == nil || p1.Prev != nil {
		t.Fatalf("page 1 = %v next %v prev %v", pageIDs(p1), p1.Next, p1.Prev)
	}
	p2 := list(backend.ListWorkflowRunsParams{Limit: 2, After: *p1.Next})
	if fmt.Sprint(pageIDs(p2)) != fmt.Sprint(all[2:4]) || p2.Next == nil || p2.Prev == nil {
		t.Fatalf("page 2 = %v", pageIDs(p2))
	}
	p3 := list(backend.ListWorkflowRunsParams{Limit: 2, After: *p2.Next})
	if fmt.Sprint(pageIDs(p3)) != fmt.Sprint(all[4:]) || p3.Next != nil || p3.Prev == nil {
		t.Fatalf("page 3 = %v next %v", pageIDs(p3), p3.Next)
	}
	back := list(backend.ListWorkflowRunsParams{Limit: 2, Before: *p3.Prev})
	if fmt.Sprint(pageIDs(back)) != fmt.Sprint(all[2:4]) || back.Next == nil || back.Prev == nil {
		t.Fatalf("back from page 3 = %v", pageIDs(back))
	}
	first := list(backend.ListWorkflowRunsParams{Limit: 2, Before: *back.Prev})
	if fmt.Sprint(pageIDs(first)) != fmt.Sprint(all[:2]) || first.Prev != nil {
		t.Fatalf("back to page 1 = %v prev %v", pageIDs(first), first.Prev)
	}
	if _, err := b.ListWorkflowRuns(t.Context(), backend.ListWorkflowRunsParams{After: *p1.Next, Before: *p1.Next}); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("after+before: err = %v", err)
	}
	empty := list(backend.ListWorkflowRunsParams{WorkflowName: "none"})
	if empty.Data == nil || len(empty.Data) != 0 || empty.Next != nil || empty.Prev != nil {
		t.Fatalf("empty page = %+v", empty)
	}
}

func TestSleepReconcilesAChildThatAlreadyFinished(t *testing.T) {
	clock := newFakeClock()
	b, _ := openTest(t, clock)
	parent := mustCreate(t, b, backend.CreateWorkflowRunParams{WorkflowName: "parent"})
	mustClaim(t, b, time.Hour, "pw")
	step, _ := b.CreateStepAttempt(t.Context(), backend.CreateStepAttemptParams{WorkflowRunID: parent.ID, WorkerID: "pw", StepName: "c", Kind: backend.StepWorkflow})
	ns := b.NamespaceID()
	child := mustCreate(t, b, backend.CreateWorkflowRunParams{WorkflowName: "child", ParentStepAttemptNamespaceID: &ns, ParentStepAttemptID: &step.ID})
	if _, err := b.SetStepAttemptChildWorkflowRun(t.Context(), backend.SetStepAttemptChildWorkflowRunParams{WorkflowRunID: parent.ID, StepAttemptID: step.ID, WorkerID: "pw", ChildWorkflowRunNamespaceID: ns, ChildWorkflowRunID: child.ID}); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, b, time.Hour, "cw")
	// The child completes while the parent still holds its lease: no wake.
	if _, err := b.CompleteWorkflowRun(t.Context(), backend.CompleteWorkflowRunParams{WorkflowRunID: child.ID, WorkerID: "cw", Output: json.RawMessage(`"ok"`)}); err != nil {
		t.Fatal(err)
	}
	if p, _ := b.GetWorkflowRun(t.Context(), parent.ID); !p.AvailableAt.Equal(clock.Now().Add(time.Hour)) {
		t.Fatalf("owned parent was woken: %v", p.AvailableAt)
	}
	events, _ := b.Subscribe(t.Context())
	if err := b.SleepWorkflowRun(t.Context(), backend.SleepWorkflowRunParams{WorkflowRunID: parent.ID, WorkerID: "pw", AvailableAt: clock.Now().Add(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	p, _ := b.GetWorkflowRun(t.Context(), parent.ID)
	if !p.AvailableAt.Equal(clock.Now()) || p.WorkerID != nil {
		t.Fatalf("parked parent = available %v worker %v; want now, none", p.AvailableAt, p.WorkerID)
	}
	waitEvent(t, events, backend.Event{Kind: backend.EventWorkAvailable})
}

func TestBusyErrorsAreRecognised(t *testing.T) {
	a, path := openTest(t, nil)
	// b waits 10 ms at most in SQLite itself, so a 50 ms lock reaches the
	// backend as SQLITE_BUSY and only its own retry (retryBusy, for up to
	// ten busy timeouts) gets past it.
	b, err := open(t.Context(), path, Options{BusyTimeout: 10 * time.Millisecond}, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	conn, err := a.db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	// What a second writer gets while the lock is held is a busy error.
	other, err := b.db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	_, busyErr := other.ExecContext(t.Context(), "BEGIN IMMEDIATE")
	other.Close()
	if !isBusy(busyErr) || isConstraint(busyErr) {
		t.Fatalf("BEGIN IMMEDIATE while another connection writes: %v; want an error isBusy recognises (and not a constraint)", busyErr)
	}
	// Another "process" waits for the lock rather than failing.
	done := make(chan error, 1)
	go func() {
		_, err := b.CreateWorkflowRun(context.Background(), backend.CreateWorkflowRunParams{WorkflowName: "wf"})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if _, err := conn.ExecContext(t.Context(), "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("create while another connection held the write lock: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestInMemoryDatabaseWorks(t *testing.T) {
	b, err := Open(t.Context(), ":memory:", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	r := mustCreate(t, b, backend.CreateWorkflowRunParams{})
	mustClaim(t, b, time.Minute, "w")
	if _, err := b.CompleteStepAttempt(t.Context(), backend.CompleteStepAttemptParams{WorkflowRunID: r.ID, StepAttemptID: "step_x", WorkerID: "w"}); !errors.Is(err, backend.ErrStepNotFound) {
		t.Fatalf("complete a missing step: err = %v, want ErrStepNotFound", err)
	}
	done, err := b.CompleteWorkflowRun(t.Context(), backend.CompleteWorkflowRunParams{WorkflowRunID: r.ID, WorkerID: "w"})
	if err != nil || done.Status != backend.RunCompleted || string(done.Output) != "null" {
		t.Fatalf("complete = %+v, %v", done, err)
	}
}

func TestWakeUpsReachOnlyTheirNamespace(t *testing.T) {
	a, path := openTest(t, nil)
	other, err := Open(t.Context(), path, Options{NamespaceID: "other"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	otherEvents, _ := other.Subscribe(t.Context())
	aEvents, _ := a.Subscribe(t.Context())
	// Events are published before the write returns, so a leak would
	// already be in the other channel.
	mustCreate(t, a, backend.CreateWorkflowRunParams{})
	waitEvent(t, aEvents, backend.Event{Kind: backend.EventWorkAvailable})
	select {
	case e := <-otherEvents:
		t.Fatalf("namespace other received %+v from namespace default", e)
	default:
	}
	r := mustCreate(t, other, backend.CreateWorkflowRunParams{})
	waitEvent(t, otherEvents, backend.Event{Kind: backend.EventWorkAvailable})
	if _, err := other.CancelWorkflowRun(t.Context(), r.ID); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, otherEvents, backend.Event{Kind: backend.EventRunFinished, WorkflowRunID: r.ID})
	select {
	case e := <-aEvents:
		t.Fatalf("namespace default received %+v from namespace other", e)
	default:
	}
}

func TestTheClaimsDeadlineSweepReadsTheDeadlineIndex(t *testing.T) {
	b, _ := openTest(t, nil)
	rows, err := b.db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+qFailExpiredRuns,
		sql.Named("error", "{}"), sql.Named("now", "2026-01-01T00:00:00.000Z"), sql.Named("ns", "default"))
	if err != nil {
		t.Fatalf("explain the deadline sweep: %v", err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if len(plan) != 1 || !strings.Contains(plan[0], "USING INDEX "+deadlineIndex) {
		t.Fatalf("deadline sweep plan %q: want a search of %s (else every claim reads every live run)", plan, deadlineIndex)
	}
}
