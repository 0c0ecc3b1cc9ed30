package backendtest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/clock"
)

const (
	// clockSlack is how far a timestamp written by the backend may be from
	// the test's own clock: millisecond truncation, a database clock, and
	// a loaded machine running the suite under -race.
	clockSlack = 2 * time.Second
	// waitTimeout bounds every wait on a condition or an event.
	waitTimeout = 10 * time.Second
	// longLease is a lease that never expires during a test.
	longLease = time.Hour
	// farFuture is a park or delay that never comes due during a test.
	farFuture = time.Hour
)

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newNamespace returns a fresh namespace id, so tests never see each
// other's rows.
func newNamespace() string { return "bt_" + randomHex(8) }

// newWorkerID returns a fresh worker id.
func newWorkerID() string { return "worker-" + randomHex(6) }

func ptr[T any](v T) *T { return &v }

// newBackend returns a backend in a fresh namespace.
func (s *suite) newBackend(t *testing.T) backend.Backend {
	t.Helper()
	return s.backendIn(t, newNamespace())
}

// backendIn returns a backend bound to ns, on its own clock, closed when
// the test ends.
func (s *suite) backendIn(t *testing.T, ns string) backend.Backend {
	t.Helper()
	return s.backendInOn(t, ns, nil)
}

// backendInOn returns a backend bound to ns whose clock is clk (nil: its
// own), closed when the test ends.
func (s *suite) backendInOn(t *testing.T, ns string, clk *clock.Fake) backend.Backend {
	t.Helper()
	var now func() time.Time
	if clk != nil {
		now = clk.Now
	}
	b := s.h.NewBackend(t, ns, now)
	if b == nil {
		t.Fatalf("Harness.NewBackend(%q) returned nil", ns)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close backend of namespace %s: %v", ns, err)
		}
	})
	if got := b.NamespaceID(); got != ns {
		t.Fatalf("NamespaceID() = %q, want %q", got, ns)
	}
	return b
}

// ageRun moves a run's created_at back by d, skipping the test when the
// harness cannot.
func (s *suite) ageRun(t *testing.T, b backend.Backend, runID string, d time.Duration) {
	t.Helper()
	if s.h.AgeRun == nil {
		t.Skip("Harness.AgeRun is nil: cannot move created_at back")
	}
	s.h.AgeRun(t, b, runID, d)
}

// requireErrorIs fails unless err wraps want.
func requireErrorIs(t testing.TB, what string, err, want error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: got no error, want one wrapping %q", what, want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %q, want one wrapping %q", what, err, want)
	}
}

// --- records -----------------------------------------------------------

// createRun creates a run, defaulting the workflow name to "wf".
func createRun(t testing.TB, b backend.Backend, p backend.CreateWorkflowRunParams) *backend.WorkflowRun {
	t.Helper()
	if p.WorkflowName == "" {
		p.WorkflowName = "wf"
	}
	r, err := b.CreateWorkflowRun(t.Context(), p)
	if err != nil {
		t.Fatalf("CreateWorkflowRun(%s): %v", p.WorkflowName, err)
	}
	if r == nil || r.ID == "" {
		t.Fatalf("CreateWorkflowRun(%s) returned %+v, want a run with an id", p.WorkflowName, r)
	}
	return r
}

func getRun(t testing.TB, b backend.Backend, id string) *backend.WorkflowRun {
	t.Helper()
	r, err := b.GetWorkflowRun(t.Context(), id)
	if err != nil {
		t.Fatalf("GetWorkflowRun(%s): %v", id, err)
	}
	return r
}

func getStep(t testing.TB, b backend.Backend, id string) *backend.StepAttempt {
	t.Helper()
	a, err := b.GetStepAttempt(t.Context(), id)
	if err != nil {
		t.Fatalf("GetStepAttempt(%s): %v", id, err)
	}
	return a
}

// claim claims up to len(workerIDs) runs.
func claim(t testing.TB, b backend.Backend, lease time.Duration, workerIDs ...string) []*backend.WorkflowRun {
	t.Helper()
	runs, err := b.ClaimWorkflowRuns(t.Context(), backend.ClaimWorkflowRunsParams{WorkerIDs: workerIDs, LeaseDuration: lease})
	if err != nil {
		t.Fatalf("ClaimWorkflowRuns(%v): %v", workerIDs, err)
	}
	return runs
}

// claimRun claims with one worker and requires that it gets run id.
func claimRun(t testing.TB, b backend.Backend, worker string, lease time.Duration, id string) *backend.WorkflowRun {
	t.Helper()
	runs := claim(t, b, lease, worker)
	if len(runs) != 1 || runs[0].ID != id {
		t.Fatalf("ClaimWorkflowRuns(%s) claimed %v, want exactly run %s", worker, runIDs(runs), id)
	}
	return runs[0]
}

// requireNothingClaimable fails if a claim returns a run.
func requireNothingClaimable(t testing.TB, b backend.Backend) {
	t.Helper()
	if runs := claim(t, b, longLease, newWorkerID()); len(runs) != 0 {
		t.Fatalf("ClaimWorkflowRuns claimed %v, want nothing", runIDs(runs))
	}
}

// startRun creates a run in an otherwise idle namespace and claims it with
// worker under a long lease.
func startRun(t testing.TB, b backend.Backend, worker string, p backend.CreateWorkflowRunParams) *backend.WorkflowRun {
	t.Helper()
	r := createRun(t, b, p)
	return claimRun(t, b, worker, longLease, r.ID)
}

func createStep(t testing.TB, b backend.Backend, runID, worker, name string, kind backend.StepKind, context string) *backend.StepAttempt {
	t.Helper()
	p := CreateStepAttemptParams{WorkflowRunID: runID, WorkerID: worker, StepName: name, Kind: kind}
	if context != "" {
		p.Context = json.RawMessage(context)
	}
	a, err := Single(b).CreateStepAttempt(t.Context(), p)
	if err != nil {
		t.Fatalf("CreateStepAttempt(%s, %s): %v", runID, name, err)
	}
	return a
}

func park(t testing.TB, b backend.Backend, runID, worker string, at time.Time) {
	t.Helper()
	err := Single(b).SleepWorkflowRun(t.Context(), SleepWorkflowRunParams{WorkflowRunID: runID, WorkerID: worker, AvailableAt: at})
	if err != nil {
		t.Fatalf("SleepWorkflowRun(%s): %v", runID, err)
	}
}

func completeRun(t testing.TB, b backend.Backend, runID, worker, output string) *backend.WorkflowRun {
	t.Helper()
	r, err := Single(b).CompleteWorkflowRun(t.Context(), CompleteWorkflowRunParams{WorkflowRunID: runID, WorkerID: worker, Output: rawOrNil(output)})
	if err != nil {
		t.Fatalf("CompleteWorkflowRun(%s): %v", runID, err)
	}
	return r
}

// failRun fails an owned run for good with errJSON (WriteFailRun).
func failRun(t testing.TB, b backend.Backend, runID, worker, errJSON string) *backend.WorkflowRun {
	t.Helper()
	r, err := Single(b).FailWorkflowRun(t.Context(), FailWorkflowRunParams{WorkflowRunID: runID, WorkerID: worker, Error: json.RawMessage(errJSON)})
	if err != nil {
		t.Fatalf("fail run %s: %v", runID, err)
	}
	return r
}

// retryRun reschedules an owned run after a failure, pending again at
// the given time (WriteRescheduleRun).
func retryRun(t testing.TB, b backend.Backend, runID, worker, errJSON string, at time.Time) *backend.WorkflowRun {
	t.Helper()
	r, err := Single(b).RescheduleWorkflowRunAfterFailedStepAttempt(t.Context(), RescheduleWorkflowRunParams{
		WorkflowRunID: runID, WorkerID: worker, Error: json.RawMessage(errJSON), AvailableAt: at})
	if err != nil {
		t.Fatalf("reschedule run %s: %v", runID, err)
	}
	return r
}

func cancelRun(t testing.TB, b backend.Backend, runID string) *backend.WorkflowRun {
	t.Helper()
	r, err := b.CancelWorkflowRun(t.Context(), runID)
	if err != nil {
		t.Fatalf("CancelWorkflowRun(%s): %v", runID, err)
	}
	return r
}

func rawOrNil(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

func runIDs(runs []*backend.WorkflowRun) []string {
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	return ids
}

// --- child and signal scenarios -------------------------------------------

// family is a parent run owned by a worker, waiting in a running
// workflow-kind step on a pending child run linked both ways.
type family struct {
	parent *backend.WorkflowRun
	step   *backend.StepAttempt
	child  *backend.WorkflowRun
}

// startFamily starts a parent under worker (in an idle namespace) and
// creates its child as the SDK does: a workflow step, a child run pointing
// at the step, then the step linked to the child.
func startFamily(t testing.TB, b backend.Backend, worker string) family {
	t.Helper()
	parent := startRun(t, b, worker, backend.CreateWorkflowRunParams{WorkflowName: "parent"})
	step := createStep(t, b, parent.ID, worker, "child", backend.StepWorkflow, `{"kind":"workflow","timeoutAt":null}`)
	ns := b.NamespaceID()
	child := createRun(t, b, backend.CreateWorkflowRunParams{
		WorkflowName:                 "child",
		IdempotencyKey:               ptr("__workflow:" + ns + ":" + step.ID),
		ParentStepAttemptNamespaceID: &ns,
		ParentStepAttemptID:          &step.ID,
	})
	linked, err := Single(b).SetStepAttemptChildWorkflowRun(t.Context(), SetStepAttemptChildWorkflowRunParams{
		WorkflowRunID: parent.ID, StepAttemptID: step.ID, WorkerID: worker,
		ChildWorkflowRunNamespaceID: ns, ChildWorkflowRunID: child.ID,
	})
	if err != nil {
		t.Fatalf("SetStepAttemptChildWorkflowRun: %v", err)
	}
	return family{parent: parent, step: linked, child: child}
}

// signalWaitContext is the context of a signal-wait step on signal.
func signalWaitContext(signal string) string {
	return fmt.Sprintf(`{"kind":"signal-wait","signal":%q,"timeoutAt":%q}`, signal, backend.FormatTime(time.Now().Add(24*time.Hour)))
}

// --- JSON ------------------------------------------------------------------

// decodeJSON decodes one JSON value keeping numbers exact.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after JSON value %q", raw)
	}
	return v, nil
}

// jsonEqual reports whether a and b are the same JSON value (key order and
// whitespace aside), or both SQL NULL (nil).
func jsonEqual(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	va, errA := decodeJSON(a)
	vb, errB := decodeJSON(b)
	if errA != nil || errB != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func showJSON(r json.RawMessage) string {
	if r == nil {
		return "NULL"
	}
	return string(r)
}

func requireJSON(t testing.TB, what string, got, want json.RawMessage) {
	t.Helper()
	if !jsonEqual(got, want) {
		t.Fatalf("%s = %s, want %s", what, showJSON(got), showJSON(want))
	}
}

// --- whole-record comparison ----------------------------------------------

type differ struct{ diffs []string }

func (d *differ) str(field, got, want string) {
	if got != want {
		d.diffs = append(d.diffs, fmt.Sprintf("%s = %q, want %q", field, got, want))
	}
}

func (d *differ) strPtr(field string, got, want *string) {
	show := func(p *string) string {
		if p == nil {
			return "nil"
		}
		return fmt.Sprintf("%q", *p)
	}
	if (got == nil) != (want == nil) || (got != nil && *got != *want) {
		d.diffs = append(d.diffs, fmt.Sprintf("%s = %s, want %s", field, show(got), show(want)))
	}
}

func (d *differ) json(field string, got, want json.RawMessage) {
	if !jsonEqual(got, want) {
		d.diffs = append(d.diffs, fmt.Sprintf("%s = %s, want %s", field, showJSON(got), showJSON(want)))
	}
}

func (d *differ) time(field string, got, want *time.Time) {
	show := func(p *time.Time) string {
		if p == nil {
			return "nil"
		}
		return p.UTC().Format(time.RFC3339Nano)
	}
	if (got == nil) != (want == nil) || (got != nil && !got.Equal(*want)) {
		d.diffs = append(d.diffs, fmt.Sprintf("%s = %s, want %s", field, show(got), show(want)))
	}
}

func (d *differ) fail(t testing.TB, what string) {
	t.Helper()
	if len(d.diffs) > 0 {
		t.Fatalf("%s differs:\n\t%s", what, strings.Join(d.diffs, "\n\t"))
	}
}

// requireRun compares every column of two runs except updated_at. JSON is
// compared as values, times to the millisecond as stored.
func requireRun(t testing.TB, what string, got, want *backend.WorkflowRun) {
	t.Helper()
	if got == nil || want == nil {
		t.Fatalf("%s: got run %v, want %v", what, got, want)
	}
	var d differ
	d.str("namespace_id", got.NamespaceID, want.NamespaceID)
	d.str("id", got.ID, want.ID)
	d.str("workflow_name", got.WorkflowName, want.WorkflowName)
	d.strPtr("version", got.Version, want.Version)
	d.str("status", string(got.Status), string(want.Status))
	d.strPtr("idempotency_key", got.IdempotencyKey, want.IdempotencyKey)
	d.json("config", got.Config, want.Config)
	d.json("context", got.Context, want.Context)
	d.json("input", got.Input, want.Input)
	d.json("output", got.Output, want.Output)
	d.json("error", got.Error, want.Error)
	d.str("attempts", fmt.Sprint(got.Attempts), fmt.Sprint(want.Attempts))
	d.strPtr("parent_step_attempt_namespace_id", got.ParentStepAttemptNamespaceID, want.ParentStepAttemptNamespaceID)
	d.strPtr("parent_step_attempt_id", got.ParentStepAttemptID, want.ParentStepAttemptID)
	d.strPtr("worker_id", got.WorkerID, want.WorkerID)
	d.time("available_at", got.AvailableAt, want.AvailableAt)
	d.time("deadline_at", got.DeadlineAt, want.DeadlineAt)
	d.time("started_at", got.StartedAt, want.StartedAt)
	d.time("finished_at", got.FinishedAt, want.FinishedAt)
	d.time("created_at", &got.CreatedAt, &want.CreatedAt)
	d.str("go_priority", fmt.Sprint(got.Priority), fmt.Sprint(want.Priority))
	d.strPtr("go_concurrency_key", got.ConcurrencyKey, want.ConcurrencyKey)
	d.time("go_queued_at", got.QueuedAt, want.QueuedAt)
	d.time("go_admitted_at", got.AdmittedAt, want.AdmittedAt)
	d.fail(t, what)
}

// requireStep compares every column of two step attempts except updated_at.
func requireStep(t testing.TB, what string, got, want *backend.StepAttempt) {
	t.Helper()
	if got == nil || want == nil {
		t.Fatalf("%s: got step attempt %v, want %v", what, got, want)
	}
	var d differ
	d.str("namespace_id", got.NamespaceID, want.NamespaceID)
	d.str("id", got.ID, want.ID)
	d.str("workflow_run_id", got.WorkflowRunID, want.WorkflowRunID)
	d.str("step_name", got.StepName, want.StepName)
	d.str("kind", string(got.Kind), string(want.Kind))
	d.str("status", string(got.Status), string(want.Status))
	d.json("config", got.Config, want.Config)
	d.json("context", got.Context, want.Context)
	d.json("output", got.Output, want.Output)
	d.json("error", got.Error, want.Error)
	d.strPtr("child_workflow_run_namespace_id", got.ChildWorkflowRunNamespaceID, want.ChildWorkflowRunNamespaceID)
	d.strPtr("child_workflow_run_id", got.ChildWorkflowRunID, want.ChildWorkflowRunID)
	d.time("started_at", got.StartedAt, want.StartedAt)
	d.time("finished_at", got.FinishedAt, want.FinishedAt)
	d.time("created_at", &got.CreatedAt, &want.CreatedAt)
	d.fail(t, what)
}

// --- time ------------------------------------------------------------------

// window is the span of the test's clock in which a backend call ran.
type window struct{ lo, hi time.Time }

// since returns the window from start to now.
func since(start time.Time) window { return window{start, time.Now()} }

// add shifts the window by d (for now + lease, now + backoff, ...).
func (w window) add(d time.Duration) window { return window{w.lo.Add(d), w.hi.Add(d)} }

// requireTimeIn fails unless got is set and within w (widened by
// clockSlack); it returns got, to be copied into an expected record.
func requireTimeIn(t testing.TB, what string, got *time.Time, w window) *time.Time {
	t.Helper()
	if got == nil {
		t.Fatalf("%s is nil, want a time in [%s, %s]", what, w.lo.Format(time.RFC3339Nano), w.hi.Format(time.RFC3339Nano))
	}
	if got.Before(w.lo.Add(-clockSlack)) || got.After(w.hi.Add(clockSlack)) {
		t.Fatalf("%s = %s, want within %v of [%s, %s]", what, got.UTC().Format(time.RFC3339Nano), clockSlack,
			w.lo.UTC().Format(time.RFC3339Nano), w.hi.UTC().Format(time.RFC3339Nano))
	}
	return got
}

// ms truncates t to the millisecond precision timestamps are stored with.
func ms(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }
