package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// TestSchedulesPage: the schedules page lists each schedule with its
// next tick, and its buttons pause, resume and run a schedule now through
// the API, saying what they did; an unknown schedule's action shows the
// API's error on the page.
func TestSchedulesPage(t *testing.T) {
	eachBackend(t, siteOptions{noWorker: true}, func(t *testing.T, s *site) {
		c := s.client()
		p := s.must(c, http.StatusOK, "GET", "/schedules", nil)
		if !strings.Contains(p.body, "No schedules.") || !strings.Contains(p.body, "PutSchedule") {
			t.Fatalf("the empty page does not say how to define one: %.1000s", p.body)
		}
		if _, err := s.c.PutSchedule(s.ctx, ow.ScheduleSpec{Name: "nightly", Workflow: "greet", Version: "v2", Cron: "0 2 * * *", TimeZone: "Europe/Paris", Input: "ada"}); err != nil {
			t.Fatal(err)
		}
		p = s.must(c, http.StatusOK, "GET", "/schedules", nil)
		for _, want := range []string{`data-schedule="nightly"`, "greet", "v2", "0 2 * * *", "Europe/Paris", "skip", "<time", `action="/schedules/nightly/pause"`, `action="/schedules/nightly/trigger"`, `aria-current="page">Schedules`} {
			if !strings.Contains(p.body, want) {
				t.Errorf("the page does not show %q: %.3000s", want, p.body)
			}
		}

		p = s.must(c, http.StatusSeeOther, "POST", "/schedules/nightly/pause", url.Values{})
		if loc := p.header.Get("Location"); loc != "/schedules?done=schedule-paused" {
			t.Fatalf("pause redirects to %q", loc)
		}
		p = s.must(c, http.StatusOK, "GET", "/schedules?done=schedule-paused", nil)
		if !strings.Contains(p.body, "Schedule paused") || !strings.Contains(p.body, ">paused<") || !strings.Contains(p.body, `action="/schedules/nightly/resume"`) {
			t.Errorf("after pausing the page does not show it paused with a resume button: %.3000s", p.body)
		}
		if got, err := s.c.GetSchedule(s.ctx, "nightly"); err != nil || !got.Paused {
			t.Fatalf("the schedule after Pause: %+v, %v", got, err)
		}

		p = s.must(c, http.StatusSeeOther, "POST", "/schedules/nightly/trigger", url.Values{})
		loc := p.header.Get("Location")
		id, ok := strings.CutPrefix(loc, "/runs/")
		id, _, _ = strings.Cut(id, "?")
		if !ok || !strings.HasSuffix(loc, "?done=schedule-triggered") {
			t.Fatalf("run now redirects to %q, want the new run's page", loc)
		}
		if run := s.waitStatus(id, "pending"); run.WorkflowName != "greet" || string(run.Input) != `"ada"` {
			t.Fatalf("the triggered run: %+v", run)
		}
		p = s.must(c, http.StatusOK, "GET", loc, nil)
		if !strings.Contains(p.body, "Run started by its schedule") || !strings.Contains(p.body, "<dt>Schedule</dt>") || !strings.Contains(p.body, "nightly</a> · run now") {
			t.Errorf("the run page does not say the schedule started it: %.1000s", p.body)
		}

		s.must(c, http.StatusSeeOther, "POST", "/schedules/nightly/resume", url.Values{})
		if got, err := s.c.GetSchedule(s.ctx, "nightly"); err != nil || got.Paused || got.Started != 1 {
			t.Fatalf("the schedule after Resume: %+v, %v", got, err)
		}

		p = s.must(c, http.StatusNotFound, "POST", "/schedules/nope/pause", url.Values{})
		if !strings.Contains(p.body, "Schedule nope:") || !strings.Contains(p.body, "schedule not found") || !strings.Contains(p.body, `data-schedule="nightly"`) {
			t.Errorf("an unknown schedule's action: %.2000s", p.body)
		}
	})
}

// TestBrowserSchedules opens the schedules page in Chromium: the next
// tick shown as a time, Pause, then Run now landing on the new run's page,
// with no script error or policy refusal on the way.
func TestBrowserSchedules(t *testing.T) {
	eachBackend(t, siteOptions{}, func(t *testing.T, s *site) {
		b := newTab(t, s)
		if _, err := s.c.PutSchedule(s.ctx, ow.ScheduleSpec{Name: "hourly-greet", Workflow: "greet", Cron: "@hourly", Input: "ada"}); err != nil {
			t.Fatal(err)
		}
		b.open("/")
		b.clickToLoad(`nav a[href="/schedules"]`)
		if !eval[bool](b, `document.querySelector('tr[data-schedule="hourly-greet"] td.next time') !== null`) {
			t.Fatalf("the next tick is not shown as a time: %s", eval[string](b, `document.body.innerText`))
		}
		b.clickToLoad(`tr[data-schedule="hourly-greet"] form[action$="/pause"] button`)
		if !eval[bool](b, `document.querySelector('.notice').textContent.includes('Schedule paused') && document.querySelector('tr[data-schedule="hourly-greet"] td.next').textContent.includes('paused')`) {
			t.Errorf("after Pause: %s", eval[string](b, `document.body.innerText`))
		}
		b.clickToLoad(`tr[data-schedule="hourly-greet"] form[action$="/trigger"] button`)
		if got := eval[string](b, `location.pathname`); !strings.HasPrefix(got, "/runs/wrun_") {
			t.Fatalf("Run now opened %s, want the new run's page", got)
		}
		b.until("the triggered run completing", `document.querySelector('#run-head .badge').textContent === 'completed'`)
		b.screenshot("schedules-run-now")
		b.open("/schedules")
		b.screenshot("schedules")
	})
}

// failingScheduleStore lists its backend's schedules with the first one
// failing, as a store does after a fire it could not commit.
type failingScheduleStore struct {
	backend.Backend
	backend.ScheduleStore
}

func (f failingScheduleStore) ListSchedules(ctx context.Context, p backend.ListSchedulesParams) (*backend.Page[backend.Schedule], error) {
	page, err := f.ScheduleStore.ListSchedules(ctx, p)
	if err == nil && len(page.Data) > 0 {
		msg := `schedule "nightly": workflowName "www…": 300 bytes, longer than the limit of 255`
		at, retry := time.Now().Add(-time.Second), time.Now().Add(time.Minute)
		page.Data[0].LastError, page.Data[0].LastErrorAt, page.Data[0].Failures, page.Data[0].RetryAt = &msg, &at, 4, &retry
	}
	return page, err
}

// TestSchedulesPageShowsAFailingSchedule: a schedule whose fires fail is
// marked failing, with its last error, its failures and what to do.
func TestSchedulesPageShowsAFailingSchedule(t *testing.T) {
	for _, bk := range backends {
		t.Run(bk.name, func(t *testing.T) {
			b := bk.open(t)
			s := newSite(t, failingScheduleStore{Backend: b, ScheduleStore: b.(backend.ScheduleStore)}, siteOptions{noWorker: true})
			if _, err := s.c.PutSchedule(s.ctx, ow.ScheduleSpec{Name: "nightly", Workflow: "greet", Cron: "0 2 * * *"}); err != nil {
				t.Fatal(err)
			}
			p := s.must(s.client(), http.StatusOK, "GET", "/schedules", nil)
			for _, want := range []string{`data-schedule-error="nightly"`, ">failing<", "Its runs cannot be started", "300 bytes, longer than the limit of 255", "4 failed fire(s) in a row", "The other schedules go on", "ow schedules apply"} {
				if !strings.Contains(p.body, want) {
					t.Errorf("the page does not show %q: %.4000s", want, p.body)
				}
			}
		})
	}
}
