package dashboard

import (
	"bytes"
	"html/template"
	"net/http"
	"net/url"
	"time"

	"github.com/openworkflow-go/openworkflow/access"
)

// pageNames are the templates with a page of their own; each is parsed
// with the layout and the shared partials.
var pageNames = []string{"runs", "run", "start", "workers", "schedules", "login", "error", "bulk", "bulk-confirm", "bulk-action", "events", "event", "flowcontrol"}

// pageParts are the templates of a page's sections kept in files of
// their own.
var pageParts = map[string][]string{"run": {"templates/approval.html", "templates/flow.html"}}

func parsePages() map[string]*template.Template {
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t := template.New("layout.html").Funcs(templateFuncs)
		files := append([]string{"templates/layout.html", "templates/partials.html", "templates/" + name + ".html"}, pageParts[name]...)
		pages[name] = template.Must(t.ParseFS(templateFS, files...))
	}
	return pages
}

// view is what the layout needs besides the page's own data.
type view struct {
	Title string
	// Nav is the current section: runs, workers, schedules or start.
	Nav string
	// SignedIn shows the sign-out button (tokens are configured and the
	// visitor has a session).
	SignedIn bool
	// CanWrite shows the action buttons and forms: the visitor's token
	// has scope write (or the dashboard has no token).
	CanWrite bool
	// Notice and Problem are the result of the last action, shown at the
	// top of the page (Problem as an alert).
	Notice, Problem string
	// Live is the URL of the page's event stream ("" for none).
	Live    string
	Version string
	Now     time.Time
	Page    any
}

func (d *Dashboard) view(r *http.Request, title, nav string, page any) *view {
	tok, known := visitor(r)
	if !known && d.keys != nil && !d.keys.Open() {
		tok, known = d.session(r) // the sign-in page, outside authenticate
	}
	_, session := d.session(r)
	return &view{Title: title, Nav: nav, SignedIn: session, CanWrite: known && tok.Scope.Allows(access.ScopeWrite),
		Version: d.version, Now: time.Now(), Page: page, Notice: notice(r.URL.Query())}
}

// render writes the page name with status.
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, name string, v *view) {
	var buf bytes.Buffer
	if err := d.pages[name].ExecuteTemplate(&buf, "layout.html", v); err != nil {
		d.log.Error("dashboard: render page", "page", name, "path", r.URL.Path, "err", err)
		http.Error(w, "the page could not be rendered (a bug: it is logged)", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fragment renders one named template of a page, for live updates.
func (d *Dashboard) fragment(page, name string, v *view) (string, error) {
	var buf bytes.Buffer
	if err := d.pages[page].ExecuteTemplate(&buf, name, v); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// fail renders the error page: what went wrong and what to do.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, status int, title, message string) {
	d.render(w, r, status, "error", d.view(r, title, "", struct {
		Status  int
		Message string
	}{status, message}))
}

// failAPI renders an API error as the error page, with the API's status.
func (d *Dashboard) failAPI(w http.ResponseWriter, r *http.Request, what string, err error) {
	status := apiStatus(err)
	if status >= 500 {
		d.log.Warn("dashboard: API call failed", "what", what, "path", r.URL.Path, "err", err)
	}
	d.fail(w, r, status, what, err.Error())
}

// notices are the results of actions, named in the redirect after them
// (?done=…) rather than carried as text, so a link cannot make the page
// say something else.
var notices = map[string]string{
	"started":     "Run started.",
	"canceled":    "Run canceled.",
	"paused":      "Run paused: no worker starts a step of it until it is resumed.",
	"run-resumed": "Run resumed.",
	"retried":     "Run retried from its failed step: it is pending again, and its completed steps keep their results.",
	"signaled":    "Signal sent.",
	// A signal sent from a run's page, to that run (SignalRun).
	"signal-delivered": "Signal delivered to this run's wait.",
	"signal-kept":      "Signal kept for this run: its next wait for that name receives it.",
	"resumed":          "Hook resumed: the payload was delivered.",
	"approved":         "Approved: the flow goes on once the module has all the approvals it requires.",
	"rejected":         "Rejected: the flow fails with SuspendedDisapproved (or goes on, if its suspend continues on disapproval).",
	"forked":           "Run forked: this new run reuses the results of the steps before the one chosen, and runs that step and those after it.",

	"schedule-paused":    "Schedule paused: its ticks start no run until it is resumed.",
	"schedule-resumed":   "Schedule resumed from its next tick; the ticks that passed while it was paused are not run.",
	"schedule-triggered": "Run started by its schedule, now.",
	"bulk-started":       "Bulk action started: the workers apply it page by page; this page follows its progress.",
	"bulk-canceled":      "Bulk action canceled: it stops at its next page, keeping what it did.",
}

func notice(q url.Values) string {
	msg := notices[q.Get("done")]
	if msg == "" {
		return ""
	}
	switch q.Get("done") {
	case "signaled":
		if n := q.Get("n"); n != "" {
			msg = "Signal sent: delivered to " + n + " waiting run(s)."
			if n == "0" {
				msg = "Signal sent, but no run was waiting for it: signals are not kept for later waits."
			}
		}
	case "resumed":
		if seq := q.Get("seq"); seq != "" {
			msg = "Hook resumed: payload #" + seq + " was delivered."
		}
	case "forked":
		if from, step := q.Get("from"), q.Get("step"); from != "" && step != "" {
			msg = "Run forked from run " + from + " at step " + step + ": it reuses the results of the steps before it, and runs " + step + " and the steps after it."
		}
	}
	return msg
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
