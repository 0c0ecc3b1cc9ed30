package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openworkflow-go/openworkflow/api"
)

// Actions are forms posted to the dashboard (cross-origin posts are
// refused before they get here), each carried out by one API operation.
// A success redirects to the run's page with a notice (?done=…); a
// failure renders the page again with the API's message beside the form,
// with the API's status.

// startFormData is the start form, blank, prefilled, or as sent with the
// problems found.
type startFormData struct {
	Workflow, Version, Input, IdempotencyKey, Delay, Deadline string
	// Problems maps a form field to what is wrong with it; Problem is a
	// problem of no one field.
	Problems map[string]string
	Problem  string
	// From is the run the form was prefilled from, if any.
	From string
}

func (d *Dashboard) startForm(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := startFormData{Workflow: q.Get("workflow"), Input: "{}"}
	if from := q.Get("from"); from != "" {
		var run api.Run
		if err := d.api.get(r.Context(), "/v1/runs/"+url.PathEscape(from), nil, &run); err != nil {
			d.failAPI(w, r, "The run to start again could not be read", err)
			return
		}
		f.Workflow, f.Version, f.From = run.WorkflowName, deref(run.Version), run.ID
		f.Input = "null"
		var buf bytes.Buffer
		if len(run.Input) > 0 && json.Indent(&buf, run.Input, "", "  ") == nil {
			f.Input = buf.String() // whole, not cut as for display: it is sent again
		}
	}
	d.render(w, r, http.StatusOK, "start", d.view(r, "Start a run", "start", &f))
}

// formFields maps the API's request members to the start form's fields.
var formFields = map[string]string{
	"workflowName": "workflow", "version": "version", "input": "input", "idempotencyKey": "idempotencyKey",
	"startAt": "delay", "delaySeconds": "delay", "deadlineAt": "deadline",
}

func (d *Dashboard) startRun(w http.ResponseWriter, r *http.Request) {
	if !d.parseForm(w, r) {
		return
	}
	f := startFormData{
		Workflow: strings.TrimSpace(r.PostFormValue("workflow")), Version: strings.TrimSpace(r.PostFormValue("version")),
		Input: r.PostFormValue("input"), IdempotencyKey: strings.TrimSpace(r.PostFormValue("idempotencyKey")),
		Delay: strings.TrimSpace(r.PostFormValue("delay")), Deadline: strings.TrimSpace(r.PostFormValue("deadline")),
		Problems: map[string]string{},
	}
	now := time.Now()
	body := map[string]any{"workflowName": f.Workflow}
	if f.Workflow == "" {
		f.Problems["workflow"] = "Give the name the workflow was registered with."
	}
	if f.Version != "" {
		body["version"] = f.Version
	}
	if strings.TrimSpace(f.Input) != "" {
		raw, problem := checkJSON(f.Input)
		if problem != "" {
			f.Problems["input"] = problem
		}
		body["input"] = raw
	}
	if f.IdempotencyKey != "" {
		body["idempotencyKey"] = f.IdempotencyKey
	}
	if f.Delay != "" {
		if at, err := parseWhen(f.Delay, now); err != nil {
			f.Problems["delay"] = err.Error()
		} else {
			body["startAt"] = at.UTC().Format(time.RFC3339Nano)
		}
	}
	if f.Deadline != "" {
		if at, err := parseWhen(f.Deadline, now); err != nil {
			f.Problems["deadline"] = err.Error()
		} else {
			body["deadlineAt"] = at.UTC().Format(time.RFC3339Nano)
		}
	}
	status := http.StatusBadRequest
	if len(f.Problems) == 0 {
		var run api.Run
		err := d.api.post(r.Context(), "/v1/runs", body, &run)
		if err == nil {
			http.Redirect(w, r, "/runs/"+url.PathEscape(run.ID)+"?done=started", http.StatusSeeOther)
			return
		}
		status = apiStatus(err)
		var e *api.Error
		if errors.As(err, &e) && formFields[e.Field] != "" {
			f.Problems[formFields[e.Field]] = e.Message
		} else {
			f.Problem = err.Error()
		}
	}
	v := d.view(r, "Start a run", "start", &f)
	v.Problem = "The run was not started: correct what is marked below."
	d.render(w, r, status, "start", v)
}

// checkJSON checks a form's JSON value, saying where it is broken (line
// and column) when it is not JSON.
func checkJSON(s string) (json.RawMessage, string) {
	raw := json.RawMessage(strings.TrimSpace(s))
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			line, col := lineCol(string(raw), int(syn.Offset))
			return nil, fmt.Sprintf("Not valid JSON at line %d, column %d: %s.", line, col, syn.Error())
		}
		return nil, "Not valid JSON: " + err.Error() + "."
	}
	return raw, ""
}

func lineCol(s string, offset int) (int, int) {
	line, col := 1, 1
	for i, c := range s {
		if i >= offset-1 {
			break
		}
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// parseWhen reads a time as the start and deadline fields take it: a
// duration from now ("90s", "15m", "1h30m", "2d") or an RFC 3339 time.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	days := 0
	if n, rest, ok := strings.Cut(s, "d"); ok {
		if v, err := strconv.Atoi(n); err == nil && v >= 0 {
			days, s = v, rest
		}
	}
	var d time.Duration
	if s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil || d < 0 {
			return time.Time{}, fmt.Errorf("give a duration from now (90s, 15m, 1h30m, 2d) or a time such as %s", now.UTC().Add(time.Hour).Format("2006-01-02T15:04:05Z"))
		}
	}
	return now.Add(time.Duration(days)*24*time.Hour + d), nil
}

// parseForm reads a posted form within the body limit, answering 413 or
// 400 itself when it cannot.
func (d *Dashboard) parseForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, d.opts.MaxBodyBytes)
	if err := r.ParseForm(); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			d.fail(w, r, http.StatusRequestEntityTooLarge, "Too large", fmt.Sprintf("The form is larger than %d bytes.", tooLarge.Limit))
			return false
		}
		d.fail(w, r, http.StatusBadRequest, "Bad form", "The form could not be read: "+err.Error())
		return false
	}
	// Forms are sent to the API as JSON, whose encoder would turn each
	// invalid byte into U+FFFD: a name the user never typed.
	for _, k := range slices.Sorted(maps.Keys(r.PostForm)) {
		for _, v := range r.PostForm[k] {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				d.fail(w, r, http.StatusBadRequest, "Bad form", fmt.Sprintf("The field %q is not valid UTF-8: send the form as UTF-8.", strings.ToValidUTF8(k, "\uFFFD")))
				return false
			}
		}
	}
	return true
}

// runAction posts an API operation for the run of the path and, on
// success, goes back to the run's page with the notice done (plus
// extra query values); on failure it shows the run's page with the
// error.
func (d *Dashboard) runAction(w http.ResponseWriter, r *http.Request, path string, body any, out any, form actionForm, done func() url.Values) {
	id := r.PathValue("id")
	err := d.api.post(r.Context(), path, body, out)
	if err == nil {
		http.Redirect(w, r, "/runs/"+url.PathEscape(id)+"?"+done().Encode(), http.StatusSeeOther)
		return
	}
	d.actionFailed(w, r, id, err, form)
}

// actionFailed renders the run's page with an action's error, keeping
// what the form held.
func (d *Dashboard) actionFailed(w http.ResponseWriter, r *http.Request, id string, err error, form actionForm) {
	status := apiStatus(err)
	if status >= 500 && status != http.StatusNotImplemented {
		d.log.Warn("dashboard: action failed", "action", form.Action, "run", id, "err", err)
	}
	var e *api.Error
	if errors.As(err, &e) {
		form.Field = e.Field
	}
	form.Problem = err.Error()
	data, lerr := d.loadRun(r.Context(), id, time.Now())
	if lerr != nil {
		d.fail(w, r, status, "The action failed", err.Error())
		return
	}
	data.Form = form
	d.renderRun(w, r, status, data, actionTitles[form.Action]+" failed: "+err.Error())
}

var actionTitles = map[string]string{
	"cancel": "Cancel", "retry": "Retry", "pause": "Pausing", "resume": "Resuming", "signal": "Sending the signal", "hook": "Resuming the hook", "approve": "The decision", "fork": "Forking",
}

func (d *Dashboard) cancelRun(w http.ResponseWriter, r *http.Request) {
	if !d.parseForm(w, r) {
		return
	}
	d.runAction(w, r, "/v1/runs/"+url.PathEscape(r.PathValue("id"))+"/cancel", nil, nil, actionForm{Action: "cancel"},
		func() url.Values { return url.Values{"done": {"canceled"}} })
}

func (d *Dashboard) retryRun(w http.ResponseWriter, r *http.Request) {
	if !d.parseForm(w, r) {
		return
	}
	form := actionForm{Action: "retry"}
	body := map[string]any{}
	if s := strings.TrimSpace(r.PostFormValue("deadline")); s != "" {
		at, err := parseWhen(s, time.Now())
		if err != nil {
			d.actionFailed(w, r, r.PathValue("id"), &api.Error{Status: http.StatusBadRequest, Code: api.CodeInvalidArgument, Field: "deadlineAt", Message: "The new deadline: " + err.Error()}, form)
			return
		}
		body["deadlineAt"] = at.UTC().Format(time.RFC3339Nano)
	}
	d.runAction(w, r, "/v1/runs/"+url.PathEscape(r.PathValue("id"))+"/retry", body, nil, form,
		func() url.Values { return url.Values{"done": {"retried"}} })
}

// pauseRun pauses the run (POST /v1/runs/{id}/pause) with the reason
// the form gives, if any.
func (d *Dashboard) pauseRun(w http.ResponseWriter, r *http.Request) {
	if !d.parseForm(w, r) {
		return
	}
	form := actionForm{Action: "pause"}
	body := map[string]any{}
	if s := strings.TrimSpace(r.PostFormValue("reason")); s != "" {
		body["reason"] = s
	}
	d.runAction(w, r, "/v1/runs/"+url.PathEscape(r.PathValue("id"))+"/pause", body, nil, form,
		func() url.Values { return url.Values{"done": {"paused"}} })
}

// resumeRun resumes a paused or canceled run (POST /v1/runs/{id}/resume).
func (d *Dashboard) resumeRun(w http.ResponseWriter, r *http.Request) {
	if !d.parseForm(w, r) {
		return
	}
	d.runAction(w, r, "/v1/runs/"+url.PathEscape(r.PathValue("id"))+"/resume", nil, nil, actionForm{Action: "resume"},
		func() url.Values { return url.Values{"done": {"run-resumed"}} })
}

// forkRun starts a new run of the run's workflow and input that reuses
// its results before the chosen step (POST /v1/runs/{id}/fork), and goes
// to the new run's page.
func (d *Dashboard) forkRun(w http.ResponseWriter, r *http.Request) {
	if !d.parseForm(w, r) {
		return
	}
	id := r.PathValue("id")
	form := actionForm{Action: "fork", Step: r.PostFormValue("step")}
	if form.Step == "" {
		d.actionFailed(w, r, id, &api.Error{Status: http.StatusBadRequest, Code: api.CodeInvalidArgument, Field: "fromStep", Message: "Choose the step to run again."}, form)
		return
	}
	var fork api.Run
	if err := d.api.post(r.Context(), "/v1/runs/"+url.PathEscape(id)+"/fork", map[string]string{"fromStep": form.Step}, &fork); err != nil {
		d.actionFailed(w, r, id, err, form)
		return
	}
	q := url.Values{"done": {"forked"}, "from": {id}, "step": {form.Step}}
	http.Redirect(w, r, "/runs/"+url.PathEscape(fork.ID)+"?"+q.Encode(), http.StatusSeeOther)
}

func (d *Dashboard) resumeHook(w http.ResponseWriter, r *http.Request) {
	if !d.parseForm(w, r) {
		return
	}
	form := actionForm{Action: "hook", Token: r.PostFormValue("token"), Payload: r.PostFormValue("payload")}
	payload := json.RawMessage("null")
	if strings.TrimSpace(form.Payload) != "" {
		raw, problem := checkJSON(form.Payload)
		if problem != "" {
			d.actionFailed(w, r, r.PathValue("id"), &api.Error{Status: http.StatusBadRequest, Code: api.CodeInvalidArgument, Field: "payload", Message: "The payload: " + problem}, form)
			return
		}
		payload = raw
	}
	if form.Token == "" {
		d.actionFailed(w, r, r.PathValue("id"), &api.Error{Status: http.StatusBadRequest, Code: api.CodeInvalidArgument, Field: "token", Message: "Name the hook to resume (its token)."}, form)
		return
	}
	var delivery api.HookDelivery
	d.runAction(w, r, "/v1/hooks/"+url.PathEscape(form.Token), payload, &delivery, form,
		func() url.Values {
			return url.Values{"done": {"resumed"}, "seq": {strconv.FormatInt(delivery.Seq, 10)}}
		})
}

// sendSignal sends a signal by name, to every run waiting for it, and
// goes back to the run it was sent from (the form's "run"), or to the
// list.
func (d *Dashboard) sendSignal(w http.ResponseWriter, r *http.Request) {
	if !d.parseForm(w, r) {
		return
	}
	runID := r.PostFormValue("run")
	form := actionForm{Action: "signal", Signal: strings.TrimSpace(r.PostFormValue("signal")), Data: r.PostFormValue("data")}
	body := map[string]any{"signal": form.Signal}
	fail := func(err error) {
		if runID == "" {
			d.fail(w, r, apiStatus(err), "The signal was not sent", err.Error())
			return
		}
		d.actionFailed(w, r, runID, err, form)
	}
	if strings.TrimSpace(form.Data) != "" {
		raw, problem := checkJSON(form.Data)
		if problem != "" {
			fail(&api.Error{Status: http.StatusBadRequest, Code: api.CodeInvalidArgument, Field: "data", Message: "The data: " + problem})
			return
		}
		body["data"] = raw
	}
	if runID != "" {
		// From a run's page: to that run, kept until it waits for the
		// signal (POST /v1/runs/{id}/signals/{name}), as Temporal's users
		// expect of a signal sent to a run.
		if form.Signal == "" {
			fail(&api.Error{Status: http.StatusBadRequest, Code: api.CodeInvalidArgument, Field: "signal", Message: "Give the signal's name."})
			return
		}
		delete(body, "signal")
		var sent api.RunSignal
		if err := d.api.post(r.Context(), "/v1/runs/"+url.PathEscape(runID)+"/signals/"+url.PathEscape(form.Signal), body, &sent); err != nil {
			fail(err)
			return
		}
		done := "signal-kept"
		if sent.Delivered {
			done = "signal-delivered"
		}
		http.Redirect(w, r, "/runs/"+url.PathEscape(runID)+"?done="+done, http.StatusSeeOther)
		return
	}
	var res api.SignalResult
	if err := d.api.post(r.Context(), "/v1/signals", body, &res); err != nil {
		fail(err)
		return
	}
	q := url.Values{"done": {"signaled"}, "n": {strconv.Itoa(len(res.RunIDs))}}
	http.Redirect(w, r, "/?"+q.Encode(), http.StatusSeeOther)
}
