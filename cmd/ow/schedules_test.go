package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
)

const schedulesFile = `
schedules:
  - name: nightly
    workflow: report
    cron: "30 2 * * *"
    time_zone: Europe/Paris
    input: {team: ops}
  - name: heartbeat
    workflow: ping
    cron: "@every 30s"
    overlap: allow_all
    paused: true
`

func TestSchedulesCommands(t *testing.T) {
	bothEnvs(t, func(t *testing.T, e *env) {
		if err := os.WriteFile(filepath.Join(e.dir, "openworkflow.yaml"), []byte(schedulesFile), 0o644); err != nil {
			t.Fatal(err)
		}
		mustContain(t, "apply", e.ok("schedules", "apply").stdout, "put 2 schedules from "+filepath.Join(e.dir, "openworkflow.yaml"))

		list := e.ok("schedules", "list").stdout
		mustContain(t, "list", list, "NAME", "NEXT TICK", "heartbeat", "ping", "@every 30s", "allow_all", "paused",
			"nightly", "report", "30 2 * * *", "Europe/Paris", "02:30:00 CE") // CET or CEST
		if strings.Index(list, "heartbeat") > strings.Index(list, "nightly") {
			t.Errorf("list is not in name order:\n%s", list)
		}
		page := decode[api.List[api.Schedule]](t, e.ok("schedules", "list", "--limit", "1", "--json"))
		if len(page.Data) != 1 || page.Data[0].Name != "heartbeat" || !page.HasMore {
			t.Fatalf("list --limit 1 --json: %+v", page)
		}
		mustContain(t, "second page", e.ok("schedules", "list", "--limit", "1", "--cursor", *page.Cursor).stdout, "nightly")

		get := e.ok("schedules", "get", "nightly", "--next", "3").stdout
		mustContain(t, "get", get, "schedule", "nightly", "workflow", "report", `{"team":"ops"}`, "overlap", "skip",
			"catch-up window", "1m0s", "state", "running", "next ticks:", "02:30:00 CE")
		if n := strings.Count(get, "02:30:00 CE"); n != 3 {
			t.Errorf("get --next 3 shows %d ticks:\n%s", n, get)
		}
		got := decode[api.Schedule](t, e.ok("schedules", "get", "nightly", "--next", "7", "--json"))
		if len(got.Upcoming) != 7 || got.NextFireAt == nil || !got.Upcoming[0].Equal(*got.NextFireAt) {
			t.Fatalf("get --next 7 --json: %+v", got)
		}

		mustContain(t, "pause", e.ok("schedules", "pause", "nightly").stdout, "schedule nightly paused; next tick: paused")
		mustContain(t, "get paused", e.ok("schedules", "get", "nightly").stdout, "paused: 'ow schedules resume nightly'")
		mustContain(t, "resume", e.ok("schedules", "resume", "nightly").stdout, "schedule nightly resumed; next tick: ", "02:30:00 CE")
		// A deploy puts the file again: heartbeat, resumed by an operator,
		// stays resumed.
		e.ok("schedules", "resume", "heartbeat")
		e.ok("schedules", "apply")
		if s := decode[api.Schedule](t, e.ok("schedules", "get", "heartbeat", "--json")); s.Paused {
			t.Error("apply paused again a schedule an operator resumed")
		}

		trig := e.ok("schedules", "trigger", "nightly").stdout
		mustContain(t, "trigger", trig, "started run wrun_", "of report", "ow runs get wrun_")
		runID := strings.Fields(strings.TrimPrefix(trig, "started run "))[0]
		mustContain(t, "the triggered run", e.ok("runs", "get", runID).stdout, runID, "report", "schedule:", "nightly (triggered ")

		mustContain(t, "delete", e.ok("schedules", "delete", "heartbeat").stdout, "deleted schedule heartbeat")
		for _, args := range [][]string{{"get", "heartbeat"}, {"pause", "heartbeat"}, {"resume", "heartbeat"}, {"trigger", "heartbeat"}, {"delete", "heartbeat"}} {
			r := e.run(append([]string{"schedules"}, args...)...)
			if r.code == 0 || !strings.Contains(r.stderr, `no schedule "heartbeat" in this namespace: see 'ow schedules list'`) {
				t.Errorf("ow schedules %s of a deleted schedule: exit %d, stderr %q", strings.Join(args, " "), r.code, r.stderr)
			}
		}
	})
}

func TestSchedulesCommandErrors(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"schedules", "pause"}, "takes 1 argument(s) <name>"},
		{[]string{"schedules", "frobnicate"}, `unknown command "frobnicate" for "ow schedules"`},
		{[]string{"schedules", "get", "x", "--next", "0"}, "invalid --next 0"},
		{[]string{"schedules", "list", "--cursor", "nope"}, "invalid --cursor"},
		{[]string{"schedules", "apply"}, "nothing to apply"},
	} {
		r := e.run(c.args...)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("ow %s: exit %d, stderr %q; want it to say %q", strings.Join(c.args, " "), r.code, r.stderr, c.want)
		}
	}
	if err := os.WriteFile(filepath.Join(e.dir, "openworkflow.yaml"), []byte("schedules:\n  - {name: n, workflow: w, cron: '@daily', time_zone: Europe/Pariss}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.run("schedules", "list")
	if r.code == 0 || !strings.Contains(r.stderr, `schedules[0] (n): time_zone "Europe/Pariss"`) {
		t.Errorf("a bad time zone in the file: exit %d, stderr %q", r.code, r.stderr)
	}
	// Issue 19: an @every under a second is refused, not run every second.
	if err := os.WriteFile(filepath.Join(e.dir, "openworkflow.yaml"), []byte("schedules:\n  - {name: n, workflow: w, cron: '@every 500ms'}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = e.run("schedules", "apply")
	if r.code == 0 || !strings.Contains(r.stderr, `schedules[0] (n): cron "@every 500ms"`) || !strings.Contains(r.stderr, "at least 1s") {
		t.Errorf("@every 500ms in the file: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestSchedulesShowAFailingSchedulesLastError: a schedule whose row holds
// a value no run accepts (written before issue 19's checks) fails to
// fire; list and get say so and what to do, and the other schedule fired.
func TestSchedulesShowAFailingSchedulesLastError(t *testing.T) {
	bothEnvs(t, func(t *testing.T, e *env) {
		if err := os.WriteFile(filepath.Join(e.dir, "openworkflow.yaml"), []byte(schedulesFile), 0o644); err != nil {
			t.Fatal(err)
		}
		e.ok("schedules", "apply")
		e.ok("schedules", "resume", "heartbeat")
		long := strings.Repeat("w", 300)
		if e.db != "" {
			db, err := sql.Open("sqlite", "file:"+e.db)
			if err != nil {
				t.Fatal(err)
			}
			_, err = db.Exec(`UPDATE "workflow_schedules" SET "workflow_name" = ? WHERE "name" = 'nightly'`, long)
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
		} else if _, err := adminPool(t).Exec(context.Background(),
			`UPDATE `+e.flags[3]+`.workflow_schedules SET workflow_name = $1 WHERE name = 'nightly'`, long); err != nil {
			t.Fatal(err)
		}
		// A worker a day from now: both schedules are due.
		b, err := e.openAt(context.Background(), func() time.Time { return time.Now().Add(24 * time.Hour) })
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		r, err := b.(backend.ScheduleStore).FireDueSchedules(context.Background(), backend.FireDueSchedulesParams{})
		if err != nil || len(r.Failures) != 1 || len(r.Firings) != 1 || r.Firings[0].Schedule != "heartbeat" {
			t.Fatalf("fire: %+v, %v; want nightly failed and heartbeat fired", r, err)
		}

		list := e.ok("schedules", "list").stdout
		mustContain(t, "list", list, "LAST ERROR", "workflowName")
		get := e.ok("schedules", "get", "nightly").stdout
		mustContain(t, "get", get, "last error", "workflowName", "300 bytes, longer than the limit of 255", "1 failed fire in a row", "tried again at",
			"the other schedules go on", "ow schedules delete nightly")
		if len(get) > 4000 {
			t.Fatalf("get prints %d bytes: the stored error must be short", len(get))
		}
		got := decode[api.Schedule](t, e.ok("schedules", "get", "nightly", "--json"))
		if got.LastError == nil || got.Failures != 1 || got.RetryAt == nil || got.LastErrorAt == nil {
			t.Fatalf("get --json: %+v; want the last error, 1 failure, a retry time", got)
		}
		// Applying the file again fixes the row and clears the error.
		e.ok("schedules", "apply")
		if got := decode[api.Schedule](t, e.ok("schedules", "get", "nightly", "--json")); got.LastError != nil || got.Failures != 0 || got.RetryAt != nil {
			t.Fatalf("after apply: %+v; want the error cleared", got)
		}
	})
}
