package dashboard_test

import (
	"bufio"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// TestTokenGuardsEveryPageAndAction: with a token configured, pages
// redirect to the sign-in form, and actions, live views and fragments
// answer 401 without the session cookie or the bearer token; nothing is
// changed by a refused action. The cookie is HttpOnly and is not the
// token.
func TestTokenGuardsEveryPageAndAction(t *testing.T) {
	const token = "s3cret-token-for-tests"
	eachBackend(t, siteOptions{token: token, noWorker: true}, func(t *testing.T, s *site) {
		id := s.start("greet", "ada")
		anon := s.client()

		p := s.must(anon, http.StatusSeeOther, "GET", "/runs/"+id, nil)
		if loc := p.header.Get("Location"); loc != "/login?next="+url.QueryEscape("/runs/"+id) {
			t.Errorf("a page without a session redirects to %q", loc)
		}
		for _, path := range []string{"/", "/workers", "/schedules", "/runs/new", "/runs/" + id, "/runs/" + id + "/live", "/live", "/counts", "/runs/" + id + "/stream?name=log"} {
			s.must(anon, http.StatusUnauthorized, "GET", path, nil, "Accept", "text/event-stream")
		}
		for _, path := range []string{"/runs/" + id + "/cancel", "/runs/" + id + "/retry", "/runs/" + id + "/fork", "/runs", "/signals", "/runs/" + id + "/hook",
			"/runs/" + id + "/pause", "/runs/" + id + "/resume",
			"/schedules/s/pause", "/schedules/s/resume", "/schedules/s/trigger"} {
			s.must(anon, http.StatusUnauthorized, "POST", path, url.Values{"workflow": {"greet"}, "signal": {"x"}, "token": {"t"}, "step": {"greet"}})
		}
		if run := s.waitStatus(id, "pending"); run.Status != backend.RunPending {
			t.Fatalf("a refused cancel changed the run: %s", run.Status)
		}
		// The stylesheet and the sign-in form need nothing.
		s.must(anon, http.StatusOK, "GET", "/static/app.css", nil)
		s.must(anon, http.StatusOK, "GET", "/login", nil)

		// A wrong token is refused and says where the right one is.
		p = s.must(anon, http.StatusUnauthorized, "POST", "/login", url.Values{"token": {"guess"}, "next": {"/runs/" + id}})
		if !strings.Contains(p.body, "OPENWORKFLOW_API_TOKEN") {
			t.Errorf("the refusal does not say where the token is: %.500s", p.body)
		}
		// The right one sets the session and goes back where it was asked.
		p = s.must(anon, http.StatusSeeOther, "POST", "/login", url.Values{"token": {token}, "next": {"/runs/" + id}})
		if loc := p.header.Get("Location"); loc != "/runs/"+id {
			t.Errorf("sign-in redirects to %q", loc)
		}
		cookie := p.header.Get("Set-Cookie")
		if !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Lax") || strings.Contains(cookie, token) {
			t.Errorf("session cookie %q: want HttpOnly, SameSite=Lax, and not the token", cookie)
		}
		p = s.must(anon, http.StatusOK, "GET", "/runs/"+id, nil)
		if !strings.Contains(p.body, id) {
			t.Errorf("the signed-in run page does not show the run")
		}
		// A next that leaves the site is not followed.
		p = s.must(anon, http.StatusSeeOther, "POST", "/login", url.Values{"token": {token}, "next": {"//evil.example/x"}})
		if loc := p.header.Get("Location"); loc != "/" {
			t.Errorf("sign-in followed next to %q", loc)
		}
		// A script may send the token as a bearer header instead.
		s.must(s.client(), http.StatusOK, "GET", "/", nil, "Authorization", "Bearer "+token)
		s.must(s.client(), http.StatusUnauthorized, "GET", "/workers", nil, "Authorization", "Bearer nope", "Accept", "application/json")
		// Signing out ends the session.
		s.must(anon, http.StatusSeeOther, "POST", "/logout", nil)
		s.must(anon, http.StatusSeeOther, "GET", "/", nil)
	})
}

// TestCrossSiteFormsAreRefused: a form posted from another origin (as a
// malicious page would make a visitor's browser do) is refused and
// changes nothing; the same form from the dashboard's own pages works.
func TestCrossSiteFormsAreRefused(t *testing.T) {
	eachBackend(t, siteOptions{noWorker: true}, func(t *testing.T, s *site) {
		id := s.start("greet", "ada")
		c := s.client()
		s.must(c, http.StatusForbidden, "POST", "/runs/"+id+"/cancel", url.Values{}, "Sec-Fetch-Site", "cross-site")
		s.must(c, http.StatusForbidden, "POST", "/runs/"+id+"/cancel", url.Values{}, "Origin", "http://evil.example")
		if run := s.waitStatus(id, "pending"); run.FinishedAt != nil {
			t.Fatalf("a cross-site cancel changed the run")
		}
		p := s.must(c, http.StatusSeeOther, "POST", "/runs/"+id+"/cancel", url.Values{}, "Sec-Fetch-Site", "same-origin", "Origin", s.url)
		if loc := p.header.Get("Location"); loc != "/runs/"+id+"?done=canceled" {
			t.Errorf("cancel redirected to %q", loc)
		}
		s.waitStatus(id, "canceled")
		p = s.must(c, http.StatusOK, "GET", "/runs/"+id+"?done=canceled", nil)
		if !strings.Contains(p.body, "Run canceled.") {
			t.Errorf("the run page after a cancel does not say it was canceled")
		}
		// Canceling again is fine (idempotent).
		s.must(c, http.StatusSeeOther, "POST", "/runs/"+id+"/cancel", url.Values{})
	})
}

// TestWithoutTokenOnlyLoopbackHosts: a dashboard without a token answers
// only requests addressed to a loopback name, so a page on another site
// cannot reach it through DNS rebinding.
func TestWithoutTokenOnlyLoopbackHosts(t *testing.T) {
	s := newSite(t, backends[0].open(t), siteOptions{noWorker: true})
	req, err := http.NewRequestWithContext(s.ctx, "GET", s.url+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "rebound.evil.example"
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("a request for host %s answered %d, want 403", req.Host, res.StatusCode)
	}
	for _, host := range []string{"localhost:8080", "127.0.0.1:1", "[::1]:80"} {
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("a request for host %s answered %d, want 200", host, res.StatusCode)
		}
	}
}

// TestStartFormChecksOnTheServer: the start form's values are checked
// again on the server (a script or an old browser may skip the page's
// checks): bad JSON is named with its line and column, a bad delay or a
// missing workflow name is named, nothing is started; good values start
// a delayed run with its deadline.
func TestStartFormChecksOnTheServer(t *testing.T) {
	eachBackend(t, siteOptions{noWorker: true}, func(t *testing.T, s *site) {
		c := s.client()
		bad := []struct {
			form url.Values
			want string
		}{
			{url.Values{"workflow": {"greet"}, "input": {"{\n  \"a\": 1,\n}"}}, "Not valid JSON at line 3, column 1"},
			{url.Values{"workflow": {""}, "input": {"1"}}, "Give the name the workflow was registered with"},
			{url.Values{"workflow": {"greet"}, "delay": {"soon"}}, "give a duration from now"},
			{url.Values{"workflow": {"greet"}, "input": {`"\ud800"`}}, "input cannot be stored"},
		}
		for _, b := range bad {
			p := s.must(c, http.StatusBadRequest, "POST", "/runs", b.form)
			if !strings.Contains(p.body, b.want) {
				t.Errorf("start with %v: the page does not say %q", b.form, b.want)
			}
			if !strings.Contains(p.body, `aria-invalid="true"`) {
				t.Errorf("start with %v: no field is marked invalid", b.form)
			}
		}
		// Issue 19: a form holding invalid UTF-8 is refused, naming the
		// field, rather than sent on as JSON with U+FFFD in its place.
		if p := s.must(c, http.StatusBadRequest, "POST", "/runs", url.Values{"workflow": {"gr\xffeet"}}); !strings.Contains(p.body, `The field &#34;workflow&#34; is not valid UTF-8`) {
			t.Errorf("a workflow name of invalid UTF-8: the page does not say so: %.2000s", p.body)
		}
		page, err := s.c.ListRuns(s.ctx, backend.ListWorkflowRunsParams{})
		if err != nil || len(page.Data) != 0 {
			t.Fatalf("refused starts left runs: %v %v", page, err)
		}
		before := time.Now()
		p := s.must(c, http.StatusSeeOther, "POST", "/runs", url.Values{"workflow": {"greet"}, "input": {`"ada"`}, "delay": {"1h"}, "deadline": {"2d"}, "idempotencyKey": {"k1"}})
		loc := p.header.Get("Location")
		id := strings.TrimSuffix(strings.TrimPrefix(loc, "/runs/"), "?done=started")
		run, err := s.c.GetRun(s.ctx, id)
		if err != nil {
			t.Fatalf("the redirect %q names no run: %v", loc, err)
		}
		if string(run.Input) != `"ada"` || run.AvailableAt == nil || run.AvailableAt.Before(before.Add(59*time.Minute)) ||
			run.DeadlineAt == nil || run.DeadlineAt.Before(before.Add(47*time.Hour)) || run.IdempotencyKey == nil || *run.IdempotencyKey != "k1" {
			t.Errorf("started run: input %s, available %v, deadline %v, key %v", run.Input, run.AvailableAt, run.DeadlineAt, run.IdempotencyKey)
		}
		p = s.must(c, http.StatusOK, "GET", loc, nil)
		for _, want := range []string{"Run started.", "scheduled", "Scheduled: no worker may start it before"} {
			if !strings.Contains(p.body, want) {
				t.Errorf("the new run's page does not say %q", want)
			}
		}
		// Start again prefills the form from the run.
		p = s.must(c, http.StatusOK, "GET", "/runs/new?from="+id, nil)
		if !strings.Contains(p.body, `value="greet"`) || !strings.Contains(p.body, "&#34;ada&#34;") {
			t.Errorf("start again is not prefilled: %.3000s", p.body)
		}
	})
}

// TestDeadWorkerLeavesAStalledRunAndAnAbandonedAttempt: a worker that
// claimed a run and started a step, then stopped renewing its lease
// (crashed), leaves the run "stalled" (not running) and its attempt
// "abandoned"; the workers view shows its lease expired.
func TestDeadWorkerLeavesAStalledRunAndAnAbandonedAttempt(t *testing.T) {
	eachBackend(t, siteOptions{noWorker: true}, func(t *testing.T, s *site) {
		id := s.start("stuck", "x")
		// A worker's own writes, through the worker side of the seam: a
		// claim with a short lease and a running step, then silence.
		claimed, err := s.b.ClaimWorkflowRuns(s.ctx, backend.ClaimWorkflowRunsParams{WorkerIDs: []string{"ghost-7f3a/0"}, LeaseDuration: 3 * time.Second})
		if err != nil || len(claimed) != 1 || claimed[0].ID != id {
			t.Fatalf("claim: %v %v", claimed, err)
		}
		errs := s.b.ApplyWrites(s.ctx, [][]backend.Write{{{Kind: backend.WriteInsertStep, WorkflowRunID: id, WorkerID: "ghost-7f3a/0",
			Step: &backend.StepAttempt{ID: "step_01ghostattempt00000000000", StepName: "hold", Kind: backend.StepFunction, Status: backend.StepRunning}}}})
		if errs[0] != nil {
			t.Fatal(errs[0])
		}
		c := s.client()
		p := s.must(c, http.StatusOK, "GET", "/workers", nil)
		if !strings.Contains(p.body, "ghost-7f3a") || !strings.Contains(p.body, ">alive<") || !strings.Contains(p.body, id) {
			t.Errorf("the workers view does not show ghost-7f3a alive holding %s: %.3000s", id, p.body)
		}
		p = s.must(c, http.StatusOK, "GET", "/runs/"+id, nil)
		if !strings.Contains(p.body, `badge s-running">running`) || strings.Contains(p.body, "abandoned</span>") {
			t.Errorf("a leased run is not shown running with its attempt running")
		}
		// The lease expires on the backend's clock: wait for the page to
		// say so.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			if p = s.must(c, http.StatusOK, "GET", "/runs/"+id, nil); strings.Contains(p.body, `badge s-stalled">stalled`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the run page still does not show the run stalled a minute after its 3 s lease: %.3000s", p.body)
			}
		}
		for _, want := range []string{`badge s-stalled">stalled`, "stopped renewing its lease", `badge s-abandoned">abandoned`, "Its worker lost the run"} {
			if !strings.Contains(p.body, want) {
				t.Errorf("the run page of a dead worker's run does not say %q", want)
			}
		}
		p = s.must(c, http.StatusOK, "GET", "/workers", nil)
		if !strings.Contains(p.body, "leases expired") {
			t.Errorf("the workers view does not show the dead worker's leases expired")
		}
	})
}

// TestParkedRunsAreShownWaiting: a run parked on a hook, a sleep or a
// child is "waiting" in the list, with what for, never "running".
func TestParkedRunsAreShownWaiting(t *testing.T) {
	eachBackend(t, siteOptions{}, func(t *testing.T, s *site) {
		id := s.start("approval", map[string]string{"Token": "tok-parked"})
		s.until("the approval run to park on its hook", func() bool {
			run, err := s.c.GetRun(s.ctx, id)
			return err == nil && run.Status == backend.RunRunning && run.WorkerID == nil
		})
		c := s.client()
		p := s.must(c, http.StatusOK, "GET", "/", nil)
		row := rowOf(t, p.body, id)
		if !strings.Contains(row, `badge s-waiting">waiting`) || !strings.Contains(row, "hook approve until") {
			t.Errorf("the list's row of a run parked on a hook: %s", row)
		}
		p = s.must(c, http.StatusOK, "GET", "/runs/"+id, nil)
		for _, want := range []string{`Waiting for a payload on hook &#34;approve&#34;`, "tok-parked", "awaited now"} {
			if !strings.Contains(p.body, want) {
				t.Errorf("the parked run's page does not say %q", want)
			}
		}
	})
}

// rowOf returns the list row of run id.
func rowOf(t *testing.T, body, id string) string {
	t.Helper()
	re := regexp.MustCompile(`(?s)<tr class="row-[a-z]+">.*?</tr>`)
	for _, row := range re.FindAllString(body, -1) {
		if strings.Contains(row, id) {
			return row
		}
	}
	t.Fatalf("no row of %s in the list", id)
	return ""
}

// TestLiveRunViewEndsWithTheRun: a run's live view sends updates while
// the run moves, then "end" once it is terminal, and closes.
func TestLiveRunViewEndsWithTheRun(t *testing.T) {
	eachBackend(t, siteOptions{}, func(t *testing.T, s *site) {
		id := s.start("steps", "live")
		req, err := http.NewRequestWithContext(s.ctx, "GET", s.url+"/runs/"+id+"/live", nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("live view of type %q", ct)
		}
		events := make(chan string)
		go func() { // owned by the test: it ends when the body does
			defer close(events)
			sc := bufio.NewScanner(res.Body)
			sc.Buffer(nil, 4<<20)
			for sc.Scan() {
				if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
					events <- ev
				}
			}
		}()
		next := func() string {
			select {
			case ev := <-events:
				return ev
			case <-time.After(20 * time.Second):
				t.Fatal("no event from the live view in 20 s")
				return ""
			}
		}
		if ev := next(); ev != "update" {
			t.Fatalf("first event %q, want update", ev)
		}
		for i := 1; i <= 3; i++ {
			s.gates.open("live/" + itoa(i))
		}
		for ev := next(); ev != "end"; ev = next() {
			if ev != "update" {
				t.Fatalf("event %q, want update or end", ev)
			}
		}
		if _, open := <-events; open {
			t.Errorf("the live view sent more after end")
		}
		s.waitStatus(id, "completed")
	})
}

func itoa(i int) string { return string(rune('0' + i)) }

// TestSendSignalFromARunPage: a run waiting for a signal offers the form
// prefilled with the signal's name; sending it delivers the data, says to
// how many runs, and the run completes with it. Bad JSON is refused and
// nothing is sent.
func TestSendSignalFromARunPage(t *testing.T) {
	eachBackend(t, siteOptions{}, func(t *testing.T, s *site) {
		id := s.start("waiter", "k1")
		s.until("the run to wait for its signal", func() bool {
			run, err := s.c.GetRun(s.ctx, id)
			return err == nil && run.Status == backend.RunRunning && run.WorkerID == nil
		})
		c := s.client()
		p := s.must(c, http.StatusOK, "GET", "/runs/"+id, nil)
		for _, want := range []string{`Waiting for signal &#34;go-k1&#34;`, `data-open="dlg-signal"`, `name="signal" required autocomplete="off" spellcheck="false" value="go-k1"`} {
			if !strings.Contains(p.body, want) {
				t.Errorf("the waiting run's page does not have %q", want)
			}
		}
		p = s.must(c, http.StatusBadRequest, "POST", "/signals", url.Values{"signal": {"go-k1"}, "data": {"{nope"}, "run": {id}})
		if !strings.Contains(p.body, "Not valid JSON at line 1, column 2") {
			t.Errorf("bad signal data: the page does not say where: %.2000s", p.body)
		}
		if run := s.waitStatus(id, "running"); run.WorkerID != nil {
			t.Fatalf("refused signal woke the run")
		}
		p = s.must(c, http.StatusSeeOther, "POST", "/signals", url.Values{"signal": {"go-k1"}, "data": {`{"by":"ops"}`}, "run": {id}})
		if loc := p.header.Get("Location"); loc != "/runs/"+id+"?done=signal-delivered" {
			t.Errorf("after the signal: %q", loc)
		}
		run := s.waitStatus(id, "completed")
		if string(run.Output) != `{"by":"ops"}` && string(run.Output) != `{"by": "ops"}` {
			t.Errorf("the run received %s", run.Output)
		}
		p = s.must(c, http.StatusOK, "GET", "/runs/"+id+"?done=signal-delivered", nil)
		if !strings.Contains(p.body, "Signal delivered to this run&#39;s wait.") {
			t.Errorf("the page does not say the signal reached the run")
		}
		// A signal sent from the page of a run not waiting for it yet is
		// kept for it, not dropped (issue 20: the sample lost its
		// delivery signal), and a finished run refuses one on its page.
		early := s.start("waiter", "k2")
		p = s.must(c, http.StatusSeeOther, "POST", "/signals", url.Values{"signal": {"go-k2"}, "data": {`{"by":"early"}`}, "run": {early}})
		if loc := p.header.Get("Location"); loc != "/runs/"+early+"?done=signal-delivered" && loc != "/runs/"+early+"?done=signal-kept" {
			t.Errorf("after a signal to a run not yet waiting: %q", loc)
		}
		if run := s.waitStatus(early, "completed"); !strings.Contains(string(run.Output), "early") {
			t.Errorf("the run that waited after the signal received %s", run.Output)
		}
		p = s.must(c, http.StatusConflict, "POST", "/signals", url.Values{"signal": {"go-k2"}, "run": {early}})
		if !strings.Contains(p.body, "completed") {
			t.Errorf("a signal to a finished run from its page: %.2000s", p.body)
		}
		// From the list, to nobody: said so.
		p = s.must(c, http.StatusSeeOther, "POST", "/signals", url.Values{"signal": {"nobody-waits"}})
		if loc := p.header.Get("Location"); loc != "/?done=signaled&n=0" {
			t.Errorf("a signal from the list went back to %q", loc)
		}
		p = s.must(c, http.StatusOK, "GET", "/?done=signaled&n=0", nil)
		if !strings.Contains(p.body, "no run was waiting for it") {
			t.Errorf("a signal to nobody is not said so")
		}
	})
}

// TestForkFromARunPage: the run page offers its steps to fork from; the
// fork goes to the new run's page, which reuses the step before the one
// chosen; an unknown step is said so on the run's page.
func TestForkFromARunPage(t *testing.T) {
	eachBackend(t, siteOptions{}, func(t *testing.T, s *site) {
		key := s.t.Name() + "/fork"
		failing.Store(key, true)
		id := s.start("flaky", key)
		s.waitStatus(id, "failed")
		failing.Delete(key)
		c := s.client()
		p := s.must(c, http.StatusOK, "GET", "/runs/"+id, nil)
		for _, want := range []string{`data-open="dlg-fork"`, `<option value="reserve">reserve</option>`, `<option value="charge">charge</option>`} {
			if !strings.Contains(p.body, want) {
				t.Errorf("the failed run's page does not have %q", want)
			}
		}
		p = s.must(c, http.StatusBadRequest, "POST", "/runs/"+id+"/fork", url.Values{"step": {"chrage"}})
		if !strings.Contains(p.body, `no step &#34;chrage&#34;`) {
			t.Errorf("a fork from an unknown step: the page does not say so: %.2000s", p.body)
		}
		p = s.must(c, http.StatusSeeOther, "POST", "/runs/"+id+"/fork", url.Values{"step": {"charge"}})
		loc := p.header.Get("Location")
		fork, query, _ := strings.Cut(strings.TrimPrefix(loc, "/runs/"), "?")
		want := url.Values{"done": {"forked"}, "from": {id}, "step": {"charge"}}
		if fork == id || !strings.HasPrefix(fork, "wrun_") || query != want.Encode() {
			t.Fatalf("after the fork: %q, want the new run's page", loc)
		}
		if run := s.waitStatus(fork, "completed"); string(run.Output) != `"charged"` {
			t.Errorf("the fork's output %s", run.Output)
		}
		p = s.must(c, http.StatusOK, "GET", loc, nil)
		if !strings.Contains(p.body, "Run forked from run "+id+" at step charge") {
			t.Errorf("the fork's page does not say where it came from")
		}
		steps, err := s.c.ListSteps(s.ctx, backend.ListStepAttemptsParams{WorkflowRunID: fork})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, a := range steps.Data {
			names = append(names, a.StepName+":"+string(a.Status))
		}
		if got := strings.Join(names, " "); !strings.HasPrefix(got, "reserve:completed __fork:") || !strings.HasSuffix(got, "charge:completed") {
			t.Errorf("the fork's attempts %s, want reserve reused, the mark, then charge", got)
		}
	})
}

// TestSearchByRunID: the search box opens the run with that id, and says
// when none has it.
func TestSearchByRunID(t *testing.T) {
	eachBackend(t, siteOptions{noWorker: true}, func(t *testing.T, s *site) {
		id := s.start("greet", "ada")
		c := s.client()
		p := s.must(c, http.StatusSeeOther, "GET", "/?q="+url.QueryEscape(" "+id+" "), nil)
		if loc := p.header.Get("Location"); loc != "/runs/"+id {
			t.Errorf("searching %s leads to %q", id, loc)
		}
		p = s.must(c, http.StatusNotFound, "GET", "/?q=wrun_nothing", nil)
		if !strings.Contains(p.body, "No run has the id &#34;wrun_nothing&#34;") {
			t.Errorf("an unknown id is not said so")
		}
		s.must(c, http.StatusNotFound, "GET", "/runs/wrun_nothing", nil)
	})
}

// TestWorkersPageShowsAReplacedLimitsDeclaration: the workers page lists
// the workflows' stored limits and who declared them, and says when a
// declaration replaced different limits, naming both (issue 19, item 11).
func TestWorkersPageShowsAReplacedLimitsDeclaration(t *testing.T) {
	eachBackend(t, siteOptions{noWorker: true}, func(t *testing.T, s *site) {
		d := s.b.(backend.LimitDeclarer)
		if _, _, err := d.DeclareWorkflowLimits(s.ctx, "contested", backend.Limits{Concurrency: 2}, "worker old (contested v1)"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := d.DeclareWorkflowLimits(s.ctx, "contested", backend.Limits{Concurrency: 5, RateLimit: 3, RatePeriod: time.Second}, "worker new (contested v2)"); err != nil {
			t.Fatal(err)
		}
		p := s.must(s.client(), http.StatusOK, "GET", "/workers", nil)
		for _, want := range []string{"Workflow limits", "contested", "concurrency 5, 3 per 1s", "worker new (contested v2)",
			"these limits replaced <strong>concurrency 2</strong>, declared by <span class=\"mono\">worker old (contested v1)</span>"} {
			if !strings.Contains(p.body, want) {
				t.Errorf("the workers page does not show %q: %.4000s", want, p.body)
			}
		}
	})
}
