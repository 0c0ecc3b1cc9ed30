package backendtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// scheduleStore returns b's ScheduleStore, skipping the test when b does
// not implement the capability.
func scheduleStore(t *testing.T, b backend.Backend) backend.ScheduleStore {
	t.Helper()
	ss, ok := b.(backend.ScheduleStore)
	if !ok {
		t.Skip("the backend does not implement backend.ScheduleStore")
	}
	return ss
}

// everySecond is a cron expression with seconds: a tick every second.
const everySecond = "* * * * * *"

func putSchedule(t testing.TB, ss backend.ScheduleStore, p backend.PutScheduleParams) *backend.Schedule {
	t.Helper()
	if p.WorkflowName == "" {
		p.WorkflowName = "wf"
	}
	s, err := ss.PutSchedule(t.Context(), p)
	if err != nil {
		t.Fatalf("PutSchedule(%s): %v", p.Name, err)
	}
	return s
}

func getSchedule(t testing.TB, ss backend.ScheduleStore, name string) *backend.Schedule {
	t.Helper()
	s, err := ss.GetSchedule(t.Context(), name)
	if err != nil {
		t.Fatalf("GetSchedule(%s): %v", name, err)
	}
	return s
}

func fire(t testing.TB, ss backend.ScheduleStore) *backend.FireReport {
	t.Helper()
	r, err := ss.FireDueSchedules(t.Context(), backend.FireDueSchedulesParams{})
	if err != nil {
		t.Fatalf("FireDueSchedules: %v", err)
	}
	return r
}

// outcomes lists a report's ticks as "outcome@offset" from base, for
// messages and comparisons.
func outcomes(r *backend.FireReport, base time.Time) []string {
	var out []string
	for _, f := range r.Firings {
		if f.Missed > 0 {
			out = append(out, fmt.Sprintf("missed×%d", f.Missed))
		}
		for _, tk := range f.Ticks {
			out = append(out, fmt.Sprintf("%s@%v", tk.Outcome, tk.ScheduledAt.Sub(base)))
		}
	}
	return out
}

func requireOutcomes(t testing.TB, r *backend.FireReport, base time.Time, want ...string) {
	t.Helper()
	got := outcomes(r, base)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
}

// requireScheduledRun fails unless run id records schedule name and tick
// at in its context, and has the schedule's workflow and input.
func requireScheduledRun(t testing.TB, b backend.Backend, id, name string, at time.Time, triggered bool, input string) *backend.WorkflowRun {
	t.Helper()
	r := getRun(t, b, id)
	sr, ok := backend.ScheduledRunOf(r.Context)
	if !ok || sr.Name != name || !sr.ScheduledAt.Equal(ms(at)) || sr.Triggered != triggered {
		t.Fatalf("run %s: context %s, want schedule %q at %v (triggered %v)", id, r.Context, name, ms(at), triggered)
	}
	if r.Status != backend.RunPending || !jsonEqual(r.Input, rawOrNil(input)) {
		t.Fatalf("run %s: status %s, input %s; want pending with input %s", id, r.Status, showJSON(r.Input), input)
	}
	return r
}

func testSchedules(t *testing.T, s *suite) {
	t.Run("Put stores a schedule with its defaults and its first tick after now", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		ss := scheduleStore(t, b)
		clk.Advance(1500 * time.Millisecond) // 12:00:01.5
		got := putSchedule(t, ss, backend.PutScheduleParams{Name: "every-10s", WorkflowName: "report", Version: ptr("v2"),
			Cron: "*/10 * * * * *", Input: json.RawMessage(`{"b":1, "a":"x\u0000y"}`)})
		want := backend.Schedule{
			NamespaceID: b.NamespaceID(), Name: "every-10s", WorkflowName: "report", Version: ptr("v2"),
			Cron: "*/10 * * * * *", TimeZone: "UTC", Input: json.RawMessage(`{"b":1, "a":"x\u0000y"}`),
			Overlap: backend.OverlapSkip, CatchupWindow: time.Minute,
			NextFireAt: fakeEpoch.Add(10 * time.Second), CreatedAt: ms(clk.Now()), UpdatedAt: ms(clk.Now()),
		}
		requireSchedule(t, "PutSchedule", got, &want)
		requireSchedule(t, "GetSchedule", getSchedule(t, ss, "every-10s"), &want)
	})

	t.Run("a cron is read in the schedule's time zone", func(t *testing.T) {
		t.Parallel()
		clk := newClock() // 2025-03-01 12:00 UTC = 13:00 in Paris, 07:00 in New York
		ss := scheduleStore(t, s.newBackendOn(t, clk))
		paris := putSchedule(t, ss, backend.PutScheduleParams{Name: "paris", Cron: "30 14 * * *", TimeZone: "Europe/Paris"})
		ny := putSchedule(t, ss, backend.PutScheduleParams{Name: "ny", Cron: "30 14 * * *", TimeZone: "America/New_York"})
		if want := fakeEpoch.Add(90 * time.Minute); !paris.NextFireAt.Equal(want) {
			t.Errorf("14:30 Europe/Paris: next fire %v, want %v", paris.NextFireAt, want)
		}
		if want := fakeEpoch.Add(7*time.Hour + 30*time.Minute); !ny.NextFireAt.Equal(want) {
			t.Errorf("14:30 America/New_York: next fire %v, want %v", ny.NextFireAt, want)
		}
	})

	t.Run("Put again keeps the next tick and the counts unless the cron or time zone changed", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		ss := scheduleStore(t, b)
		first := putSchedule(t, ss, backend.PutScheduleParams{Name: "s", Cron: "0 * * * *"}) // hourly: 13:00
		clk.Advance(30 * time.Minute)
		again := putSchedule(t, ss, backend.PutScheduleParams{Name: "s", Cron: "0 * * * *", WorkflowName: "other", Input: json.RawMessage(`[1]`), Overlap: backend.OverlapAllowAll, Paused: true})
		if !again.NextFireAt.Equal(first.NextFireAt) || again.WorkflowName != "other" || string(again.Input) != `[1]` ||
			again.Overlap != backend.OverlapAllowAll || again.Paused || !again.CreatedAt.Equal(first.CreatedAt) || !again.UpdatedAt.Equal(ms(clk.Now())) {
			t.Fatalf("Put with the same cron: %+v; want next fire %v kept, workflow, input and overlap replaced, not paused (Paused applies to new schedules only), created_at kept", again, first.NextFireAt)
		}
		moved := putSchedule(t, ss, backend.PutScheduleParams{Name: "s", Cron: "*/20 * * * *"})
		if want := fakeEpoch.Add(40 * time.Minute); !moved.NextFireAt.Equal(want) {
			t.Fatalf("Put with a new cron at 12:30: next fire %v, want %v (recomputed from now)", moved.NextFireAt, want)
		}
		zoned := putSchedule(t, ss, backend.PutScheduleParams{Name: "s", Cron: "*/20 * * * *", TimeZone: "Asia/Kolkata"}) // UTC+5:30: :20 there is :50 here
		if want := fakeEpoch.Add(50 * time.Minute); !zoned.NextFireAt.Equal(want) {
			t.Fatalf("Put with a new time zone at 12:30: next fire %v, want %v", zoned.NextFireAt, want)
		}
	})

	t.Run("Put refuses a bad field, naming it, and writes nothing", func(t *testing.T) {
		t.Parallel()
		ss := scheduleStore(t, s.newBackend(t))
		putSchedule(t, ss, backend.PutScheduleParams{Name: "kept", Cron: "@hourly"})
		for _, c := range []struct {
			field string
			p     backend.PutScheduleParams
		}{
			{"name", backend.PutScheduleParams{Cron: "@hourly", WorkflowName: "wf"}},
			{"name", backend.PutScheduleParams{Name: "a\x00b", Cron: "@hourly", WorkflowName: "wf"}},
			{"workflowName", backend.PutScheduleParams{Name: "kept", Cron: "@hourly"}},
			{"cron", backend.PutScheduleParams{Name: "kept", Cron: "61 * * * *", WorkflowName: "wf"}},
			{"cron", backend.PutScheduleParams{Name: "kept", Cron: "* * *", WorkflowName: "wf"}},
			{"cron", backend.PutScheduleParams{Name: "kept", Cron: "", WorkflowName: "wf"}},
			{"cron", backend.PutScheduleParams{Name: "kept", Cron: "0 0 30 2 *", WorkflowName: "wf"}},
			{"cron", backend.PutScheduleParams{Name: "kept", Cron: "CRON_TZ=Europe/Paris 0 * * * *", WorkflowName: "wf"}},
			{"timeZone", backend.PutScheduleParams{Name: "kept", Cron: "@hourly", TimeZone: "Mars/Olympus_Mons", WorkflowName: "wf"}},
			{"timeZone", backend.PutScheduleParams{Name: "kept", Cron: "@hourly", TimeZone: "Local", WorkflowName: "wf"}},
			{"overlap", backend.PutScheduleParams{Name: "kept", Cron: "@hourly", Overlap: "queue", WorkflowName: "wf"}},
			{"catchupWindow", backend.PutScheduleParams{Name: "kept", Cron: "@hourly", CatchupWindow: 10 * time.Millisecond, WorkflowName: "wf"}},
			{"input", backend.PutScheduleParams{Name: "kept", Cron: "@hourly", Input: json.RawMessage(`{"a":`), WorkflowName: "wf"}},
			// The limits of a run's own fields (issue 19): a schedule
			// never holds a value its runs would be refused.
			{"workflowName", backend.PutScheduleParams{Name: "kept", Cron: "@hourly", WorkflowName: strings.Repeat("w", 1_000_000)}},
			{"workflowName", backend.PutScheduleParams{Name: "kept", Cron: "@hourly", WorkflowName: strings.Repeat("w", backend.MaxWorkflowNameLength+1)}},
			{"workflowName", backend.PutScheduleParams{Name: "kept", Cron: "@hourly", WorkflowName: "bad\xffname"}},
			{"version", backend.PutScheduleParams{Name: "kept", Cron: "@hourly", WorkflowName: "wf", Version: ptr(strings.Repeat("v", backend.MaxVersionLength+1))}},
			{"version", backend.PutScheduleParams{Name: "kept", Cron: "@hourly", WorkflowName: "wf", Version: ptr("v\xff")}},
			{"name", backend.PutScheduleParams{Name: strings.Repeat("n", backend.MaxScheduleNameLength+1), Cron: "@hourly", WorkflowName: "wf"}},
			{"cron", backend.PutScheduleParams{Name: "kept", Cron: strings.Repeat("*", backend.MaxCronLength+1), WorkflowName: "wf"}},
			{"timeZone", backend.PutScheduleParams{Name: "kept", Cron: "@hourly", TimeZone: strings.Repeat("Z", 10_000), WorkflowName: "wf"}},
			{"priority", backend.PutScheduleParams{Name: "kept", Cron: "@hourly", WorkflowName: "wf", Priority: backend.MaxPriority + 1}},
			// robfig/cron would make these tick every second (issue 19, 12).
			{"cron", backend.PutScheduleParams{Name: "kept", Cron: "@every 500ms", WorkflowName: "wf"}},
			{"cron", backend.PutScheduleParams{Name: "kept", Cron: "@every 0s", WorkflowName: "wf"}},
			{"cron", backend.PutScheduleParams{Name: "kept", Cron: "@every 1500ms", WorkflowName: "wf"}},
			{"cron", backend.PutScheduleParams{Name: "kept", Cron: "@every -5s", WorkflowName: "wf"}},
		} {
			_, err := ss.PutSchedule(t.Context(), c.p)
			var fe *backend.ScheduleFieldError
			if !errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, backend.ErrInvalidArgument) {
				t.Errorf("PutSchedule(%+v) = %v; want a ScheduleFieldError on %s wrapping ErrInvalidArgument", c.p, err, c.field)
			}
		}
		if got := getSchedule(t, ss, "kept"); got.Cron != "@hourly" || got.WorkflowName != "wf" {
			t.Fatalf("after refused puts the schedule is %+v, want it unchanged", got)
		}
		for _, ok := range []string{"@every 1s", "@every 90s", "@every 1h30m"} {
			putSchedule(t, ss, backend.PutScheduleParams{Name: "every", Cron: ok})
		}
	})

	t.Run("a schedule whose fire fails holds up no other, is reported, backs off, and recovers", func(t *testing.T) {
		t.Parallel()
		if s.h.StoreScheduleWorkflowName == nil {
			t.Skip("Harness.StoreScheduleWorkflowName is nil")
		}
		clk := newClock()
		b := s.newBackendOn(t, clk)
		ss := scheduleStore(t, b)
		// "bad" sorts first and is due first: before issue 19 its failure
		// ended the whole fire, and "good" never fired.
		putSchedule(t, ss, backend.PutScheduleParams{Name: "bad", Cron: everySecond, Overlap: backend.OverlapAllowAll})
		clk.Advance(time.Millisecond)
		putSchedule(t, ss, backend.PutScheduleParams{Name: "good", Cron: everySecond, Overlap: backend.OverlapAllowAll})
		// A row written before the checks existed: a name no run accepts
		// (PostgreSQL's index on workflow_runs refuses it, SQLite would
		// have stored it).
		s.h.StoreScheduleWorkflowName(t, b, "bad", strings.Repeat("w", 1_000_000))

		failedAt := func(r *backend.FireReport, failures int, retryAt time.Time) {
			t.Helper()
			if len(r.Failures) != 1 || r.Failures[0].Schedule != "bad" || r.Failures[0].Failures != failures || !r.Failures[0].RetryAt.Equal(ms(retryAt)) {
				t.Fatalf("failures %+v; want bad's failure %d, retried at %v", r.Failures, failures, ms(retryAt))
			}
			var fe *backend.ScheduleFieldError
			if !errors.As(r.Failures[0].Err, &fe) || fe.Field != "workflowName" || len(r.Failures[0].Err.Error()) > 2000 {
				t.Fatalf("failure error %.300v; want a short ScheduleFieldError on workflowName", r.Failures[0].Err)
			}
			got := getSchedule(t, ss, "bad")
			if got.LastError == nil || !strings.Contains(*got.LastError, "workflowName") || len(*got.LastError) > backend.MaxScheduleErrorLength ||
				got.LastErrorAt == nil || !got.LastErrorAt.Equal(ms(clk.Now())) || got.Failures != failures ||
				got.RetryAt == nil || !got.RetryAt.Equal(ms(retryAt)) || got.Started != 0 {
				t.Fatalf("bad after %d failures: last error %.200v at %v, failures %d, retry at %v, started %d; want the error stored, retry at %v, nothing started",
					failures, deref(got.LastError), got.LastErrorAt, got.Failures, got.RetryAt, got.Started, ms(retryAt))
			}
		}

		clk.Advance(time.Second) // 12:00:01.001
		r := fire(t, ss)
		requireOutcomes(t, r, fakeEpoch, "started@1s")
		failedAt(r, 1, clk.Now().Add(time.Second))
		if r.Firings[0].Schedule != "good" {
			t.Fatalf("fired %q, want good", r.Firings[0].Schedule)
		}

		clk.Advance(time.Second) // bad's retry has come: it fails again, backing off longer
		r = fire(t, ss)
		requireOutcomes(t, r, fakeEpoch, "started@2s")
		failedAt(r, 2, clk.Now().Add(2*time.Second))

		clk.Advance(time.Second) // bad backs off: only good fires, no failure reported
		r = fire(t, ss)
		requireOutcomes(t, r, fakeEpoch, "started@3s")
		if len(r.Failures) != 0 {
			t.Fatalf("during bad's back-off: failures %+v, want none", r.Failures)
		}
		if r.NextFireAt == nil || !r.NextFireAt.Equal(fakeEpoch.Add(4*time.Second)) {
			t.Fatalf("next fire %v, want good's next tick at +4s", r.NextFireAt)
		}

		// Fixed (as an operator's put would, without clearing anything):
		// its next fire succeeds and clears the error.
		s.h.StoreScheduleWorkflowName(t, b, "bad", "wf")
		clk.Advance(time.Second) // 12:00:04.001, bad's retry time
		r = fire(t, ss)
		if len(r.Failures) != 0 || len(r.Firings) != 2 {
			t.Fatalf("after the fix: fired %v, failures %+v; want both schedules fired", outcomes(r, fakeEpoch), r.Failures)
		}
		got := getSchedule(t, ss, "bad")
		if got.LastError != nil || got.LastErrorAt != nil || got.Failures != 0 || got.RetryAt != nil || got.Started == 0 {
			t.Fatalf("bad after a fire that succeeded: %+v; want no error, no back-off, runs started", got)
		}
	})

	t.Run("Put clears a failing schedule's error and back-off", func(t *testing.T) {
		t.Parallel()
		if s.h.StoreScheduleWorkflowName == nil {
			t.Skip("Harness.StoreScheduleWorkflowName is nil")
		}
		clk := newClock()
		b := s.newBackendOn(t, clk)
		ss := scheduleStore(t, b)
		putSchedule(t, ss, backend.PutScheduleParams{Name: "s", Cron: everySecond})
		s.h.StoreScheduleWorkflowName(t, b, "s", strings.Repeat("w", backend.MaxWorkflowNameLength+1))
		clk.Advance(time.Second)
		if r := fire(t, ss); len(r.Failures) != 1 {
			t.Fatalf("failures %+v, want s's", r.Failures)
		}
		if _, err := ss.TriggerSchedule(t.Context(), "s"); !errors.Is(err, backend.ErrInvalidArgument) {
			t.Fatalf("TriggerSchedule of a schedule holding an invalid name: %v, want ErrInvalidArgument", err)
		}
		got := putSchedule(t, ss, backend.PutScheduleParams{Name: "s", Cron: everySecond})
		if got.LastError != nil || got.Failures != 0 || got.RetryAt != nil {
			t.Fatalf("after Put: %+v; want the error and back-off cleared", got)
		}
		requireOutcomes(t, fire(t, ss), fakeEpoch, "started@1s")
	})

	t.Run("Get, List and Delete", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		ss := scheduleStore(t, b)
		for _, n := range []string{"c", "a", "b"} {
			putSchedule(t, ss, backend.PutScheduleParams{Name: n, Cron: "@daily"})
		}
		var names []string
		after := ""
		for pages := 0; ; pages++ {
			page, err := ss.ListSchedules(t.Context(), backend.ListSchedulesParams{Limit: 2, After: after})
			if err != nil {
				t.Fatalf("ListSchedules: %v", err)
			}
			for _, sc := range page.Data {
				names = append(names, sc.Name)
			}
			if page.Next == nil {
				break
			}
			after = *page.Next
		}
		if fmt.Sprint(names) != "[a b c]" {
			t.Fatalf("listed %v, want [a b c] in two pages", names)
		}
		if _, err := ss.ListSchedules(t.Context(), backend.ListSchedulesParams{After: "garbage"}); !errors.Is(err, backend.ErrInvalidArgument) {
			t.Fatalf("ListSchedules with a bad cursor: %v, want ErrInvalidArgument", err)
		}
		if err := ss.DeleteSchedule(t.Context(), "b"); err != nil {
			t.Fatalf("DeleteSchedule(b): %v", err)
		}
		_, err := ss.GetSchedule(t.Context(), "b")
		requireErrorIs(t, "GetSchedule of a deleted schedule", err, backend.ErrScheduleNotFound)
		requireErrorIs(t, "DeleteSchedule again", ss.DeleteSchedule(t.Context(), "b"), backend.ErrScheduleNotFound)
		for what, err := range map[string]error{
			"pause":   func() error { _, err := ss.PauseSchedule(t.Context(), "nope"); return err }(),
			"resume":  func() error { _, err := ss.ResumeSchedule(t.Context(), "nope"); return err }(),
			"trigger": func() error { _, err := ss.TriggerSchedule(t.Context(), "nope"); return err }(),
		} {
			requireErrorIs(t, what+" of a missing schedule", err, backend.ErrScheduleNotFound)
		}
		if other := scheduleStore(t, s.newBackend(t)); true {
			_, err := other.GetSchedule(t.Context(), "a")
			requireErrorIs(t, "GetSchedule from another namespace", err, backend.ErrScheduleNotFound)
		}
	})

	t.Run("a due tick starts one run that records the schedule and the tick", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		ss := scheduleStore(t, b)
		putSchedule(t, ss, backend.PutScheduleParams{Name: "s", WorkflowName: "report", Cron: "*/10 * * * * *", Input: json.RawMessage(`{"team":"ops"}`)})
		if r := fire(t, ss); len(r.Firings) != 0 || r.NextFireAt == nil || !r.NextFireAt.Equal(fakeEpoch.Add(10*time.Second)) {
			t.Fatalf("nothing due: fired %v, next fire %v; want nothing, next at +10s", outcomes(r, fakeEpoch), r.NextFireAt)
		}
		clk.Advance(10*time.Second + 3*time.Millisecond)
		r := fire(t, ss)
		requireOutcomes(t, r, fakeEpoch, "started@10s")
		run := requireScheduledRun(t, b, r.Firings[0].Ticks[0].RunID, "s", fakeEpoch.Add(10*time.Second), false, `{"team":"ops"}`)
		if run.WorkflowName != "report" || !run.CreatedAt.Equal(ms(clk.Now())) {
			t.Fatalf("run %+v: want workflow report created now", run)
		}
		got := getSchedule(t, ss, "s")
		if !got.NextFireAt.Equal(fakeEpoch.Add(20*time.Second)) || got.Started != 1 || got.LastRunID == nil || *got.LastRunID != run.ID ||
			got.LastFireAt == nil || !got.LastFireAt.Equal(fakeEpoch.Add(10*time.Second)) {
			t.Fatalf("after the tick: %+v; want next fire +20s, one started, last run %s at +10s", got, run.ID)
		}
		if r := fire(t, ss); len(r.Firings) != 0 {
			t.Fatalf("firing again at once: %v, want nothing", outcomes(r, fakeEpoch))
		}
	})

	t.Run("each tick starts exactly one run however many workers fire at once", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		ns := newNamespace()
		const workers, ticks = 3, 100
		var stores []backend.ScheduleStore
		var first backend.Backend
		for range workers {
			b := s.backendInOn(t, ns, clk)
			if first == nil {
				first = b
			}
			stores = append(stores, scheduleStore(t, b))
		}
		putSchedule(t, stores[0], backend.PutScheduleParams{Name: "s", Cron: everySecond, Overlap: backend.OverlapAllowAll})
		started := map[time.Time]string{}
		for tick := 1; tick <= ticks; tick++ {
			clk.Advance(time.Second)
			var wg sync.WaitGroup
			reports := make([]*backend.FireReport, workers)
			errs := make([]error, workers)
			for i, ss := range stores {
				wg.Go(func() { reports[i], errs[i] = ss.FireDueSchedules(t.Context(), backend.FireDueSchedulesParams{}) })
			}
			wg.Wait()
			for i, r := range reports {
				if errs[i] != nil {
					t.Fatalf("tick %d, worker %d: %v", tick, i, errs[i])
				}
				for _, f := range r.Firings {
					for _, tk := range f.Ticks {
						if tk.Outcome != backend.TickStarted {
							t.Fatalf("tick %d, worker %d: %s at %v", tick, i, tk.Outcome, tk.ScheduledAt)
						}
						if prev, dup := started[tk.ScheduledAt]; dup {
							t.Fatalf("tick %v started twice: runs %s and %s", tk.ScheduledAt, prev, tk.RunID)
						}
						started[tk.ScheduledAt] = tk.RunID
					}
				}
			}
			if len(started) != tick {
				t.Fatalf("after %d ticks %d runs started", tick, len(started))
			}
		}
		page, err := first.ListWorkflowRuns(t.Context(), backend.ListWorkflowRunsParams{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Data) != ticks {
			t.Fatalf("%d runs stored, want %d", len(page.Data), ticks)
		}
		if got := getSchedule(t, stores[0], "s"); got.Started != ticks {
			t.Fatalf("schedule counts %d started, want %d", got.Started, ticks)
		}
	})

	t.Run("skip skips the ticks that come while the latest run is not finished", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		ss := scheduleStore(t, b)
		putSchedule(t, ss, backend.PutScheduleParams{Name: "s", Cron: everySecond})
		clk.Advance(time.Second)
		r := fire(t, ss)
		requireOutcomes(t, r, fakeEpoch, "started@1s")
		clk.Advance(2 * time.Second)
		requireOutcomes(t, fire(t, ss), fakeEpoch, "skipped@2s", "skipped@3s")
		cancelRun(t, b, r.Firings[0].Ticks[0].RunID)
		clk.Advance(time.Second)
		requireOutcomes(t, fire(t, ss), fakeEpoch, "started@4s")
		if got := getSchedule(t, ss, "s"); got.Started != 2 || got.Skipped != 2 {
			t.Fatalf("counts: %d started, %d skipped; want 2 and 2", got.Started, got.Skipped)
		}
	})

	t.Run("buffer_one keeps one tick and starts it when the latest run finishes", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		ss := scheduleStore(t, b)
		putSchedule(t, ss, backend.PutScheduleParams{Name: "s", Cron: everySecond, Overlap: backend.OverlapBufferOne})
		clk.Advance(time.Second)
		r := fire(t, ss)
		requireOutcomes(t, r, fakeEpoch, "started@1s")
		clk.Advance(2 * time.Second)
		r2 := fire(t, ss)
		requireOutcomes(t, r2, fakeEpoch, "buffered@2s", "skipped@3s")
		if !r2.Buffered {
			t.Fatal("the report does not say a tick is buffered")
		}
		if got := getSchedule(t, ss, "s"); got.BufferedAt == nil || !got.BufferedAt.Equal(fakeEpoch.Add(2*time.Second)) {
			t.Fatalf("buffered tick %v, want +2s", got.BufferedAt)
		}
		if r := fire(t, ss); len(r.Firings) != 0 {
			t.Fatalf("while the run goes on: %v, want nothing", outcomes(r, fakeEpoch))
		}
		cancelRun(t, b, r.Firings[0].Ticks[0].RunID)
		r3 := fire(t, ss) // the buffered tick starts at once, before the next tick (+4s)
		requireOutcomes(t, r3, fakeEpoch, "started@2s")
		requireScheduledRun(t, b, r3.Firings[0].Ticks[0].RunID, "s", fakeEpoch.Add(2*time.Second), false, "")
		if got := getSchedule(t, ss, "s"); got.BufferedAt != nil || got.Started != 2 || got.Skipped != 1 {
			t.Fatalf("after the buffered run started: %+v; want no buffered tick, 2 started, 1 skipped", got)
		}
	})

	t.Run("allow_all starts a run for every tick", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		ss := scheduleStore(t, s.newBackendOn(t, clk))
		putSchedule(t, ss, backend.PutScheduleParams{Name: "s", Cron: everySecond, Overlap: backend.OverlapAllowAll})
		clk.Advance(3 * time.Second)
		requireOutcomes(t, fire(t, ss), fakeEpoch, "started@1s", "started@2s", "started@3s")
	})

	t.Run("after downtime only the ticks within the catch-up window run; older ones are counted", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		ss := scheduleStore(t, s.newBackendOn(t, clk))
		putSchedule(t, ss, backend.PutScheduleParams{Name: "s", Cron: "*/10 * * * * *", CatchupWindow: 25 * time.Second, Overlap: backend.OverlapAllowAll})
		clk.Advance(2*time.Minute + 500*time.Millisecond) // ticks +10s … +120s; the window reaches back to +95.5s
		r := fire(t, ss)
		requireOutcomes(t, r, fakeEpoch, "missed×9", "started@1m40s", "started@1m50s", "started@2m0s")
		if got := getSchedule(t, ss, "s"); got.Missed != 9 || got.Started != 3 || !got.NextFireAt.Equal(fakeEpoch.Add(130*time.Second)) {
			t.Fatalf("after the catch-up: %d missed, %d started, next %v; want 9, 3, +2m10s", got.Missed, got.Started, got.NextFireAt)
		}
	})

	t.Run("a daily schedule down for days misses its ticks and waits for the next", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		ss := scheduleStore(t, s.newBackendOn(t, clk))
		putSchedule(t, ss, backend.PutScheduleParams{Name: "s", Cron: "0 3 * * *"}) // 03:00 UTC, first on Mar 2
		clk.Advance(3 * 24 * time.Hour)                                             // Mar 4 12:00: Mar 2, 3 and 4 passed
		requireOutcomes(t, fire(t, ss), fakeEpoch, "missed×3")
		if got := getSchedule(t, ss, "s"); !got.NextFireAt.Equal(time.Date(2025, 3, 5, 3, 0, 0, 0, time.UTC)) {
			t.Fatalf("next fire %v, want Mar 5 03:00", got.NextFireAt)
		}
	})

	t.Run("a paused schedule does not tick; resuming starts from the next tick", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		ss := scheduleStore(t, b)
		ch := subscribe(t, b)
		putSchedule(t, ss, backend.PutScheduleParams{Name: "s", Cron: everySecond, Overlap: backend.OverlapAllowAll})
		awaitEvent(t, ch, "a schedule event after Put", func(e backend.Event) bool { return e.Kind == backend.EventScheduleChanged })
		paused, err := ss.PauseSchedule(t.Context(), "s")
		if err != nil || !paused.Paused {
			t.Fatalf("PauseSchedule: %+v, %v", paused, err)
		}
		again, err := ss.PauseSchedule(t.Context(), "s")
		if err != nil || !again.Paused || !again.UpdatedAt.Equal(paused.UpdatedAt) {
			t.Fatalf("PauseSchedule again: %+v, %v; want it unchanged", again, err)
		}
		clk.Advance(5 * time.Second)
		if r := fire(t, ss); len(r.Firings) != 0 || r.NextFireAt != nil {
			t.Fatalf("paused: fired %v, next %v; want nothing", outcomes(r, fakeEpoch), r.NextFireAt)
		}
		clk.Advance(300 * time.Millisecond)
		resumed, err := ss.ResumeSchedule(t.Context(), "s")
		if err != nil || resumed.Paused || !resumed.NextFireAt.Equal(fakeEpoch.Add(6*time.Second)) {
			t.Fatalf("ResumeSchedule at +5.3s: %+v, %v; want running, next tick +6s", resumed, err)
		}
		awaitEvent(t, ch, "a schedule event after Resume", func(e backend.Event) bool { return e.Kind == backend.EventScheduleChanged })
		clk.Advance(time.Second)
		requireOutcomes(t, fire(t, ss), fakeEpoch, "started@6s")
		if _, err := ss.ResumeSchedule(t.Context(), "s"); err != nil {
			t.Fatalf("ResumeSchedule of a running schedule: %v", err)
		}
		if got := getSchedule(t, ss, "s"); !got.NextFireAt.Equal(fakeEpoch.Add(7 * time.Second)) {
			t.Fatalf("resuming a running schedule moved its next tick to %v", got.NextFireAt)
		}
	})

	t.Run("trigger starts a run now, paused or not, which the overlap policy sees", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		ss := scheduleStore(t, b)
		putSchedule(t, ss, backend.PutScheduleParams{Name: "s", Cron: everySecond, Paused: true, Input: json.RawMessage(`"in"`)})
		clk.Advance(250 * time.Millisecond)
		run, err := ss.TriggerSchedule(t.Context(), "s")
		if err != nil {
			t.Fatalf("TriggerSchedule: %v", err)
		}
		requireScheduledRun(t, b, run.ID, "s", clk.Now(), true, `"in"`)
		if got := getSchedule(t, ss, "s"); got.Started != 1 || *got.LastRunID != run.ID || !got.Paused {
			t.Fatalf("after the trigger: %+v; want 1 started, last run %s, still paused", got, run.ID)
		}
		if _, err := ss.ResumeSchedule(t.Context(), "s"); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		requireOutcomes(t, fire(t, ss), fakeEpoch, "skipped@1s") // the triggered run is still pending
	})

	t.Run("a tick whose run exists is never started again", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		ss := scheduleStore(t, b)
		putSchedule(t, ss, backend.PutScheduleParams{Name: "s", Cron: "*/10 * * * * *", Overlap: backend.OverlapAllowAll})
		clk.Advance(10 * time.Second)
		requireOutcomes(t, fire(t, ss), fakeEpoch, "started@10s")
		// The clock is set back (NTP, or an operator), and a change of
		// cron recomputes the next tick from it: +10s comes again.
		clk.Set(fakeEpoch)
		putSchedule(t, ss, backend.PutScheduleParams{Name: "s", Cron: "*/5 * * * * *", Overlap: backend.OverlapAllowAll})
		putSchedule(t, ss, backend.PutScheduleParams{Name: "s", Cron: "*/10 * * * * *", Overlap: backend.OverlapAllowAll})
		clk.Advance(10 * time.Second)
		requireOutcomes(t, fire(t, ss), fakeEpoch, "already-started@10s")
		page, err := b.ListWorkflowRuns(t.Context(), backend.ListWorkflowRunsParams{})
		if err != nil || len(page.Data) != 1 {
			t.Fatalf("runs: %d (%v), want the one of the first fire", len(page.Data), err)
		}
	})

	t.Run("a new schedule wakes the subscribers", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace()
		client, worker := s.backendIn(t, ns), s.backendIn(t, ns)
		ch := subscribe(t, worker)
		putSchedule(t, scheduleStore(t, client), backend.PutScheduleParams{Name: "s", Cron: "@hourly"})
		awaitEvent(t, ch, "a schedule event", func(e backend.Event) bool { return e.Kind == backend.EventScheduleChanged })
	})
}

// requireSchedule compares every field of a schedule.
func requireSchedule(t testing.TB, what string, got, want *backend.Schedule) {
	t.Helper()
	var d differ
	d.str("namespace", got.NamespaceID, want.NamespaceID)
	d.str("name", got.Name, want.Name)
	d.str("workflow name", got.WorkflowName, want.WorkflowName)
	d.strPtr("version", got.Version, want.Version)
	d.str("cron", got.Cron, want.Cron)
	d.str("time zone", got.TimeZone, want.TimeZone)
	if string(got.Input) != string(want.Input) {
		d.diffs = append(d.diffs, fmt.Sprintf("input = %s, want %s byte for byte", got.Input, want.Input))
	}
	d.str("overlap", string(got.Overlap), string(want.Overlap))
	d.str("catch-up window", got.CatchupWindow.String(), want.CatchupWindow.String())
	d.str("paused", fmt.Sprint(got.Paused), fmt.Sprint(want.Paused))
	d.time("next fire", &got.NextFireAt, &want.NextFireAt)
	d.time("buffered at", got.BufferedAt, want.BufferedAt)
	d.strPtr("last run", got.LastRunID, want.LastRunID)
	d.time("last fire", got.LastFireAt, want.LastFireAt)
	d.str("counts", fmt.Sprint(got.Started, got.Skipped, got.Missed), fmt.Sprint(want.Started, want.Skipped, want.Missed))
	d.time("created at", &got.CreatedAt, &want.CreatedAt)
	d.time("updated at", &got.UpdatedAt, &want.UpdatedAt)
	d.fail(t, what)
}

// deref is *p, or "<nil>".
func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}
