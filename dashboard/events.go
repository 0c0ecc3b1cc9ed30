package dashboard

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/openworkflow-go/openworkflow/api"
)

// eventsData is the events page: a page of events, newest first (GET
// /v1/events, optionally of one name), and the stored triggers and
// cancelOn declarations of the namespace's workflows (GET
// /v1/event-triggers), grouped by workflow.
type eventsData struct {
	Name     string
	Events   []api.StoredEvent
	Next     string
	Triggers []workflowTriggers
}

// workflowTriggers are one workflow's declarations.
type workflowTriggers struct {
	Workflow string
	Start    []api.EventTrigger
	Cancel   []api.EventTrigger
}

// eventData is one event's page: the event and what it did.
type eventData struct {
	Event api.StoredEvent
}

func (d *Dashboard) eventsPage(w http.ResponseWriter, r *http.Request) {
	q := url.Values{"limit": {"50"}}
	name := r.URL.Query().Get("name")
	if name != "" {
		q.Set("name", name)
	}
	if c := r.URL.Query().Get("cursor"); c != "" {
		q.Set("cursor", c)
	}
	var page api.List[api.StoredEvent]
	if err := d.api.get(r.Context(), "/v1/events", q, &page); err != nil {
		d.failAPI(w, r, "The events could not be listed", err)
		return
	}
	var ts api.List[api.EventTrigger]
	if err := d.api.get(r.Context(), "/v1/event-triggers", nil, &ts); err != nil {
		d.failAPI(w, r, "The event triggers could not be listed", err)
		return
	}
	data := &eventsData{Name: name, Events: page.Data}
	if page.Cursor != nil {
		data.Next = *page.Cursor
	}
	for _, t := range ts.Data {
		if n := len(data.Triggers); n == 0 || data.Triggers[n-1].Workflow != t.WorkflowName {
			data.Triggers = append(data.Triggers, workflowTriggers{Workflow: t.WorkflowName})
		}
		wt := &data.Triggers[len(data.Triggers)-1]
		if t.Kind == "cancel" {
			wt.Cancel = append(wt.Cancel, t)
		} else {
			wt.Start = append(wt.Start, t)
		}
	}
	d.render(w, r, http.StatusOK, "events", d.view(r, "Events", "events", data))
}

func (d *Dashboard) eventPage(w http.ResponseWriter, r *http.Request) {
	var ev api.StoredEvent
	if err := d.api.get(r.Context(), "/v1/events/"+url.PathEscape(r.PathValue("id")), nil, &ev); err != nil {
		var apiErr *api.Error
		if errors.As(err, &apiErr) && apiErr.Code == api.CodeNotFound {
			d.fail(w, r, http.StatusNotFound, "No such event", "There is no event "+r.PathValue("id")+" in this namespace (it may have been pruned by retention).")
			return
		}
		d.failAPI(w, r, "The event could not be read", err)
		return
	}
	d.render(w, r, http.StatusOK, "event", d.view(r, "Event "+ev.ID, "events", &eventData{Event: ev}))
}
