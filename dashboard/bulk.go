package dashboard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/openworkflow-go/openworkflow/api"
)

// Bulk actions: the list (GET /bulk-actions) with a form that counts what
// a query selects; the confirmation (GET /bulk-actions/new, a dry run of
// POST /v1/bulk-actions) that shows that count before anything is done;
// the start (POST /bulk-actions); and the action's page with its
// progress, live (GET /bulk-actions/{id}, …/live), and its Cancel.

// bulkOperations are the operations the form offers, with what each does.
var bulkOperations = []struct{ Name, Does string }{
	{"cancel", "cancel the pending and running runs"},
	{"retry", "retry the failed runs (not those marked not retryable)"},
	{"pause", "pause the pending and running runs"},
	{"resume", "resume the paused runs, and the canceled runs in place"},
	{"delete", "delete the finished runs, with everything they own"},
}

// bulkListData is the bulk actions page.
type bulkListData struct {
	Actions    []api.BulkAction
	Operations []struct{ Name, Does string }
	Query, Op  string
}

// bulkConfirmData is the confirmation of a bulk action: what it would act
// on now.
type bulkConfirmData struct {
	Dry        api.BulkDryRun
	Does       string
	Reason     string
	Operations []struct{ Name, Does string }
}

// bulkActionData is a bulk action's page.
type bulkActionData struct {
	Action api.BulkAction
	// Done is how many runs the pages reached (acted, skipped, failed);
	// Total the larger of that and the action's matched count.
	Done, Total int64
	Open        bool
	fingerprint [sha256.Size]byte
}

func (d *Dashboard) bulkListPage(w http.ResponseWriter, r *http.Request) {
	var page api.List[api.BulkAction]
	if err := d.api.get(r.Context(), "/v1/bulk-actions", url.Values{"limit": {"100"}}, &page); err != nil {
		d.failAPI(w, r, "The bulk actions could not be listed", err)
		return
	}
	q := r.URL.Query()
	data := &bulkListData{Actions: page.Data, Operations: bulkOperations, Query: q.Get("query"), Op: q.Get("operation")}
	d.render(w, r, http.StatusOK, "bulk", d.view(r, "Bulk actions", "bulk", data))
}

// bulkConfirmPage counts what the query selects (a dry run) and asks to
// confirm, showing the count; a bad query goes back to the form with the
// API's message (line and column).
func (d *Dashboard) bulkConfirmPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	op, query := q.Get("operation"), q.Get("query")
	var dry api.BulkDryRun
	err := d.api.post(r.Context(), "/v1/bulk-actions", map[string]any{"operation": op, "query": query, "dryRun": true}, &dry)
	if err != nil {
		d.bulkFailed(w, r, op, query, err)
		return
	}
	data := &bulkConfirmData{Dry: dry, Operations: bulkOperations}
	for _, o := range bulkOperations {
		if o.Name == op {
			data.Does = o.Does
		}
	}
	d.render(w, r, http.StatusOK, "bulk-confirm", d.view(r, "Confirm the bulk action", "bulk", data))
}

// bulkFailed renders the list page with the form as it was and the
// API's problem.
func (d *Dashboard) bulkFailed(w http.ResponseWriter, r *http.Request, op, query string, err error) {
	var page api.List[api.BulkAction]
	_ = d.api.get(r.Context(), "/v1/bulk-actions", url.Values{"limit": {"100"}}, &page)
	v := d.view(r, "Bulk actions", "bulk", &bulkListData{Actions: page.Data, Operations: bulkOperations, Query: query, Op: op})
	v.Problem = err.Error()
	d.render(w, r, apiStatus(err), "bulk", v)
}

// startBulk starts the confirmed action and opens its page.
func (d *Dashboard) startBulk(w http.ResponseWriter, r *http.Request) {
	if !d.parseForm(w, r) {
		return
	}
	op, query := r.PostForm.Get("operation"), r.PostForm.Get("query")
	body := map[string]any{"operation": op, "query": query, "reason": r.PostForm.Get("reason")}
	if rate := strings.TrimSpace(r.PostForm.Get("maxPerSecond")); rate != "" {
		n, err := strconv.Atoi(rate)
		if err != nil || n < 1 {
			d.bulkFailed(w, r, op, query, &api.Error{Status: http.StatusBadRequest, Code: api.CodeInvalidArgument, Field: "maxPerSecond",
				Message: "the rate must be a whole number of runs per second, 1 or more, got " + strconv.Quote(rate)})
			return
		}
		body["maxPerSecond"] = n
	}
	var a api.BulkAction
	err := d.api.post(r.Context(), "/v1/bulk-actions", body, &a)
	if err != nil {
		d.bulkFailed(w, r, op, query, err)
		return
	}
	http.Redirect(w, r, "/bulk-actions/"+url.PathEscape(a.ID)+"?"+url.Values{"done": {"bulk-started"}}.Encode(), http.StatusSeeOther)
}

func (d *Dashboard) loadBulk(ctx context.Context, id string) (*bulkActionData, error) {
	var a api.BulkAction
	if err := d.api.get(ctx, "/v1/bulk-actions/"+url.PathEscape(id), nil, &a); err != nil {
		return nil, err
	}
	done := a.Acted + a.Skipped + a.Failed
	data := &bulkActionData{Action: a, Done: done, Total: max(a.Matched, done), Open: a.State == "running" || a.State == "canceling"}
	b, _ := json.Marshal(a)
	data.fingerprint = sha256.Sum256(b)
	return data, nil
}

func (d *Dashboard) bulkActionPage(w http.ResponseWriter, r *http.Request) {
	d.renderBulkAction(w, r, http.StatusOK, "")
}

func (d *Dashboard) renderBulkAction(w http.ResponseWriter, r *http.Request, status int, problem string) {
	id := r.PathValue("id")
	data, err := d.loadBulk(r.Context(), id)
	if err != nil {
		d.failAPI(w, r, "Bulk action "+id, err)
		return
	}
	v := d.view(r, "Bulk action "+id, "bulk", data)
	v.Problem = problem
	if data.Open {
		v.Live = "/bulk-actions/" + url.PathEscape(id) + "/live?since=" + hex.EncodeToString(data.fingerprint[:])
	}
	d.render(w, r, status, "bulk-action", v)
}

// cancelBulk asks the action to stop at its next page.
func (d *Dashboard) cancelBulk(w http.ResponseWriter, r *http.Request) {
	if !d.parseForm(w, r) {
		return
	}
	id := r.PathValue("id")
	if err := d.api.post(r.Context(), "/v1/bulk-actions/"+url.PathEscape(id)+"/cancel", nil, nil); err != nil {
		d.renderBulkAction(w, r, apiStatus(err), err.Error())
		return
	}
	http.Redirect(w, r, "/bulk-actions/"+url.PathEscape(id)+"?"+url.Values{"done": {"bulk-canceled"}}.Encode(), http.StatusSeeOther)
}

// bulkLive sends the action's progress section while it changes, and ends
// once the action is final.
func (d *Dashboard) bulkLive(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ev, ok := startEvents(w)
	if !ok {
		return
	}
	last := sinceParam(r)
	tick := time.NewTicker(d.opts.LiveInterval)
	defer tick.Stop()
	for {
		data, err := d.loadBulk(r.Context(), id)
		switch {
		case r.Context().Err() != nil:
			return
		case err != nil:
			ev.send("problem", map[string]string{"message": "Live updates paused: " + err.Error()})
		case data.fingerprint != last:
			html, err := d.fragment("bulk-action", "bulk-progress", d.view(r, "", "bulk", data))
			if err != nil {
				d.log.Error("dashboard: render live bulk action", "err", err)
				return
			}
			if !ev.send("update", map[string]string{"bulk-progress": html}) {
				return
			}
			last = data.fingerprint
		}
		if err == nil && !data.Open {
			ev.send("end", map[string]string{"status": data.Action.State, "message": "The bulk action is " + data.Action.State + ": live updates stopped."})
			return
		}
		if !ev.keepAlive() {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// bulkQueryOf is the run query of the runs list's filters (status,
// workflow and the query box), for its "Select all matching" link.
func bulkQueryOf(f runsFilter) string {
	var terms []string
	if f.Status != "" {
		terms = append(terms, "status = "+strconv.Quote(f.Status))
	}
	if f.Workflow != "" {
		terms = append(terms, "workflow = "+strconv.Quote(f.Workflow))
	}
	if strings.TrimSpace(f.Query) != "" {
		if len(terms) == 0 {
			return f.Query
		}
		terms = append(terms, "("+f.Query+")")
	}
	return strings.Join(terms, " AND ")
}
