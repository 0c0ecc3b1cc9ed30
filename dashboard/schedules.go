package dashboard

import (
	"context"
	"net/http"
	"net/url"

	"github.com/openworkflow-go/openworkflow/api"
)

// schedulesData is the schedules page: every schedule of the namespace
// (up to maxSchedules), by name, as GET /v1/schedules lists them, and the
// problem of the last action when it failed.
type schedulesData struct {
	Schedules []api.Schedule
	// Truncated: more schedules exist than the page read.
	Truncated bool
}

// maxSchedules bounds the schedules the page reads (one page of the
// API's largest).
const maxSchedules = 1000

func (d *Dashboard) schedulesPage(w http.ResponseWriter, r *http.Request) {
	d.renderSchedules(w, r, http.StatusOK, "")
}

// renderSchedules renders the schedules page with status and, after a
// failed action, its problem.
func (d *Dashboard) renderSchedules(w http.ResponseWriter, r *http.Request, status int, problem string) {
	data, err := d.loadSchedules(r.Context())
	if err != nil {
		d.failAPI(w, r, "The schedules could not be listed", err)
		return
	}
	v := d.view(r, "Schedules", "schedules", data)
	v.Problem = problem
	d.render(w, r, status, "schedules", v)
}

func (d *Dashboard) loadSchedules(ctx context.Context) (*schedulesData, error) {
	var page api.List[api.Schedule]
	if err := d.api.get(ctx, "/v1/schedules", url.Values{"limit": {"1000"}}, &page); err != nil {
		return nil, err
	}
	return &schedulesData{Schedules: page.Data, Truncated: page.HasMore}, nil
}

// scheduleAction posts the API operation verb (pause, resume) of the
// schedule of the path and goes back to the schedules page, with the
// notice done, or with the API's error.
func (d *Dashboard) scheduleAction(verb, done string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !d.parseForm(w, r) {
			return
		}
		name := r.PathValue("name")
		if err := d.api.post(r.Context(), "/v1/schedules/"+url.PathEscape(name)+"/"+verb, nil, nil); err != nil {
			d.scheduleFailed(w, r, name, err)
			return
		}
		http.Redirect(w, r, "/schedules?"+url.Values{"done": {done}}.Encode(), http.StatusSeeOther)
	}
}

// triggerSchedule starts a run of the schedule now and opens its page.
func (d *Dashboard) triggerSchedule(w http.ResponseWriter, r *http.Request) {
	if !d.parseForm(w, r) {
		return
	}
	name := r.PathValue("name")
	var run api.Run
	if err := d.api.post(r.Context(), "/v1/schedules/"+url.PathEscape(name)+"/trigger", nil, &run); err != nil {
		d.scheduleFailed(w, r, name, err)
		return
	}
	http.Redirect(w, r, "/runs/"+url.PathEscape(run.ID)+"?"+url.Values{"done": {"schedule-triggered"}}.Encode(), http.StatusSeeOther)
}

// scheduleFailed shows the schedules page with an action's error.
func (d *Dashboard) scheduleFailed(w http.ResponseWriter, r *http.Request, name string, err error) {
	status := apiStatus(err)
	if status >= 500 && status != http.StatusNotImplemented {
		d.log.Warn("dashboard: schedule action failed", "schedule", name, "path", r.URL.Path, "err", err)
	}
	d.renderSchedules(w, r, status, "Schedule "+name+": "+err.Error())
}
