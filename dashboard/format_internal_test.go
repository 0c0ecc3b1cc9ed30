package dashboard

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/api"
)

func TestDurationsAndTimesReadAsTheScriptWrites(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{500 * time.Microsecond, "<1ms"},
		{850 * time.Millisecond, "850ms"},
		{3200 * time.Millisecond, "3.2s"},
		{3 * time.Second, "3s"},
		{42 * time.Second, "42s"},
		{4*time.Minute + 12*time.Second, "4m 12s"},
		{2 * time.Hour, "2h"},
		{2*time.Hour + 5*time.Minute, "2h 5m"},
		{3*24*time.Hour + 4*time.Hour, "3d 4h"},
	} {
		if got := fmtDuration(c.d); got != c.want {
			t.Errorf("fmtDuration(%v) = %q, want %q", c.d, got, c.want)
		}
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{now.Add(-300 * time.Millisecond), "just now"},
		{now.Add(-42 * time.Second), "42s ago"},
		{now.Add(-5 * time.Minute), "5m ago"},
		{now.Add(-47 * time.Hour), "47h ago"},
		{now.Add(-3 * 24 * time.Hour), "3d ago"},
		{now.Add(10 * time.Minute), "in 10m"},
		{now.Add(-40 * 24 * time.Hour), "2026-10-14"},
	} {
		if got := relTime(c.t, now); got != c.want {
			t.Errorf("relTime(%v) = %q, want %q", now.Sub(c.t), got, c.want)
		}
	}
}

func TestParseWhenTakesDurationsAndTimes(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"90s":                  now.Add(90 * time.Second),
		"1h30m":                now.Add(90 * time.Minute),
		"2d":                   now.Add(48 * time.Hour),
		"1d12h":                now.Add(36 * time.Hour),
		"2026-12-01T00:00:00Z": time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
	} {
		got, err := parseWhen(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseWhen(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"soon", "-5m", "5", "2026-13-01", "d"} {
		if _, err := parseWhen(in, now); err == nil || !strings.Contains(err.Error(), "give a duration from now") {
			t.Errorf("parseWhen(%q) = %v, want an error saying what to give", in, err)
		}
	}
}

func TestCheckJSONSaysWhere(t *testing.T) {
	if raw, problem := checkJSON(" {\"a\": [1, 2]} "); problem != "" || string(raw) != `{"a": [1, 2]}` {
		t.Errorf("good JSON: %s, %q", raw, problem)
	}
	for in, want := range map[string]string{
		"{\n  \"a\": 1,\n}": "line 3, column 1",
		"[1, 2":             "Not valid JSON",
		"{nope}":            "line 1, column 2",
	} {
		if _, problem := checkJSON(in); !strings.Contains(problem, want) {
			t.Errorf("checkJSON(%q) = %q, want it to say %q", in, problem, want)
		}
	}
}

func TestSafeNextStaysOnTheSite(t *testing.T) {
	for in, want := range map[string]string{
		"/runs/x?y=1":       "/runs/x?y=1",
		"":                  "/",
		"//evil.example/":   "/",
		"/\\evil.example":   "/",
		"https://evil.test": "/",
		"/a\r\nSet-Cookie:": "/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSplitSlotAndThousands(t *testing.T) {
	for in, want := range map[string][2]string{
		"host-1-abc/3":   {"host-1-abc", "3"},
		"a/b/12":         {"a/b", "12"},
		"ts-worker-uuid": {"ts-worker-uuid", ""},
		"x/notanumber":   {"x/notanumber", ""},
	} {
		if w, s := splitSlot(in); w != want[0] || s != want[1] {
			t.Errorf("splitSlot(%q) = %q, %q", in, w, s)
		}
	}
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1500: "-1,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestTimelineOfRetriesAChildAndAManualRetry: a step's attempts share its
// row, a back-off separates a failure from the next attempt, a manual
// retry is a marker (and the gap it explains is not a back-off), a child
// run's bar links to it, and positions are within the chart.
func TestTimelineOfRetriesAChildAndAManualRetry(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(ms int) *time.Time { v := t0.Add(time.Duration(ms) * time.Millisecond); return &v }
	child := "wrun_child"
	run := &api.Run{ID: "wrun_x", Status: "completed", CreatedAt: t0, StartedAt: at(900), FinishedAt: at(1000)}
	step := func(id, name, kind, status string, from, to int) api.Step {
		return api.Step{ID: id, StepName: name, Kind: kind, Status: status, CreatedAt: *at(from), StartedAt: at(from), FinishedAt: at(to)}
	}
	steps := []api.Step{
		step("s1", "notify", "workflow", "completed", 10, 100),
		step("s2", "charge", "function", "failed", 110, 120),
		step("s3", "charge", "function", "failed", 300, 310),
		{ID: "s4", StepName: "__retry:s3", Kind: "retry", Status: "completed", CreatedAt: *at(600)},
		step("s5", "charge", "function", "completed", 910, 920),
	}
	steps[0].ChildRunID = &child
	tl := buildTimeline(run, steps, t0.Add(time.Hour))
	if len(tl.Rows) != 2 || tl.Rows[0].Name != "notify" || tl.Rows[1].Name != "charge" || tl.Rows[1].Attempts != 3 {
		t.Fatalf("rows: %+v", tl.Rows)
	}
	if got := tl.Rows[0].Bars[0].Href; got != "/runs/"+child {
		t.Errorf("the child's bar links to %q", got)
	}
	charge := tl.Rows[1]
	if len(charge.Bars) != 3 || charge.Bars[0].Class != "failed" || charge.Bars[2].Class != "completed" {
		t.Errorf("charge's bars: %+v", charge.Bars)
	}
	if len(charge.Gaps) != 2 || charge.Gaps[0].Class != "backoff" || charge.Gaps[1].Class != "retried" {
		t.Errorf("charge's gaps: %+v", charge.Gaps)
	}
	if len(tl.Retries) != 1 || tl.Retries[0].X < 59 || tl.Retries[0].X > 61 {
		t.Errorf("the manual retry's marker: %+v (want at 60%%)", tl.Retries)
	}
	// The run began at its first attempt (10 ms), not at started_at, which
	// the retry moved to 900 ms.
	if tl.Queued.W > 1.5 {
		t.Errorf("the queued bar spans %.1f%%; the run began at 1%% of its span", tl.Queued.W)
	}
	for _, r := range tl.Rows {
		for _, b := range append(r.Bars, r.Gaps...) {
			if b.X < 0 || b.W <= 0 || b.X+b.W > 100.0001 {
				t.Errorf("bar out of the chart: %+v", b)
			}
		}
	}
}

// TestDescribeSaysWhatAParkedRunWaitsFor: each kind of wait is named with
// what it waits for; a parked run with no wait is retrying a failed
// step; a run whose lease expired is stalled, never running.
func TestDescribeSaysWhatAParkedRunWaitsFor(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	later := now.Add(time.Hour)
	wait := func(kind, ctx string) []api.Step {
		return []api.Step{{StepName: "w", Kind: kind, Status: "running", Context: json.RawMessage(ctx)}}
	}
	parked := &api.Run{Status: "running", Parked: true, AvailableAt: &later}
	for _, c := range []struct {
		steps       []api.Step
		label, want string
	}{
		{wait("sleep", `{"kind":"sleep","resumeAt":"2026-11-23T13:00:00.000Z"}`), "waiting", "durable sleep"},
		{wait("signal-wait", `{"kind":"signal-wait","signal":"approved","timeoutAt":"2026-11-23T13:00:00.000Z"}`), "waiting", `signal "approved"`},
		{wait("hook-wait", `{"kind":"hook-wait","hookId":"hook_1","timeoutAt":"2026-11-23T13:00:00.000Z"}`), "waiting", "hook"},
		{wait("workflow", `{"kind":"workflow","timeoutAt":"2026-11-23T13:00:00.000Z"}`), "waiting", "child run"},
		{[]api.Step{{StepName: "charge", Kind: "function", Status: "failed"}}, "retrying", `step "charge" failed`},
	} {
		st := describe(parked, c.steps, now)
		if st.Label != c.label || !strings.Contains(st.Explain, c.want) {
			t.Errorf("%s: %s / %q, want %s mentioning %q", c.steps[0].Kind, st.Label, st.Explain, c.label, c.want)
		}
		if c.label == "waiting" && (st.Until == nil || !st.Until.Equal(later)) {
			t.Errorf("%s: until %v, want %v", c.steps[0].Kind, st.Until, later)
		}
	}
	worker := "w-1/0"
	expired := now.Add(-time.Minute)
	if st := describe(&api.Run{Status: "running", WorkerID: &worker, AvailableAt: &expired}, nil, now); st.Label != "stalled" {
		t.Errorf("a run whose lease expired is %q", st.Label)
	}
	if st := describe(&api.Run{Status: "running", WorkerID: &worker, AvailableAt: &later}, nil, now); st.Label != "running" {
		t.Errorf("a leased run is %q", st.Label)
	}
	if st := describe(&api.Run{Status: "pending", AvailableAt: &later}, nil, now); st.Label != "scheduled" {
		t.Errorf("a delayed run is %q", st.Label)
	}
}
