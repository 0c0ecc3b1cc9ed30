package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/openflow"
)

// The truth test (issue 20, item 12) loads the page of runs in many
// states in Chromium and checks what each shows — status badge, the run's
// error shown or not, the attempts' states, stream counts, fork lineage,
// JSON values — against the API's own JSON answer for the same run,
// mechanically: the expectations are derived from the API's answer, not
// written down.

// truthWorkflows are the truth test's workflows:
//   - truth-wait: step "fetch" fails once (retried after 50 ms), then the
//     run waits an hour for signal "go-<key>";
//   - truth-json: step "prepare", then "compare" whose output holds > < &,
//     writing two chunks to stream "log" and closing it;
//   - truth-fail: step "boom" fails for good.
func truthWorkflows() []ow.Definition {
	var tries sync.Map
	wait := ow.Define(ow.Spec{Name: "truth-wait"}, func(ctx ow.Context, key string) (string, error) {
		if _, err := ow.Run(ctx, "fetch", func(context.Context) (int, error) {
			n, _ := tries.LoadOrStore(key, new(int))
			*(n.(*int))++
			if *(n.(*int)) == 1 {
				return 0, errors.New("connection reset by peer")
			}
			return 200, nil
		}, ow.WithRetryPolicy(ow.RetryPolicy{InitialInterval: 50 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: time.Second, MaximumAttempts: 3})); err != nil {
			return "", err
		}
		v, ok, err := ow.WaitForSignal[string](ctx, "go-"+key, ow.WithTimeout(time.Hour))
		if err != nil || !ok {
			return "", err
		}
		return v, nil
	})
	js := ow.Define(ow.Spec{Name: "truth-json"}, func(ctx ow.Context, key string) (map[string]string, error) {
		if _, err := ow.Run(ctx, "prepare", func(context.Context) (string, error) { return "<ready>", nil }); err != nil {
			return nil, err
		}
		return ow.Run(ctx, "compare", func(sctx context.Context) (map[string]string, error) {
			w, err := ow.OpenStream(sctx, "log")
			if err != nil {
				return nil, err
			}
			if _, err := w.WriteString("a > b\n"); err != nil {
				return nil, err
			}
			if _, err := w.WriteString("c < d\n"); err != nil {
				return nil, err
			}
			if err := w.Close(); err != nil {
				return nil, err
			}
			return map[string]string{"rule": "a > b && c < d", "key": key}, nil
		})
	})
	fail := ow.Define(ow.Spec{Name: "truth-fail"}, func(ctx ow.Context, key string) (string, error) {
		return ow.Run(ctx, "boom", func(context.Context) (string, error) {
			return "", ow.NonRetryable(errors.New("the ledger is closed"))
		})
	})
	return []ow.Definition{wait, js, fail}
}

// truthFlow is an OpenFlow flow whose second module raises (exit 3).
const truthFlow = `{
  "summary": "truth: the second module raises",
  "value": {"modules": [
    {"id": "a", "value": {"type": "rawscript", "language": "bash", "content": "echo 1", "input_transforms": {}}},
    {"id": "b", "value": {"type": "rawscript", "language": "bash", "content": "echo 'disk full' >&2\nexit 3", "input_transforms": {}}}
  ]}
}`

// truthRuns are the runs the truth test looks at, by what they show.
type truthRuns struct {
	completed, failed, waiting, canceled, origin, fork, flow string
	// stopWorker stops the worker (at most once), to leave runs pending.
	stopWorker func()
}

// newTruthRuns starts a site (server, API, dashboard) with a worker of the
// truth workflows and OpenFlow, and brings a run into each state.
func newTruthRuns(t *testing.T, s *site) truthRuns {
	t.Helper()
	w := ow.NewWorker(s.b, ow.WorkerOptions{Concurrency: 8})
	e := openflow.New(openflow.Options{WorkDir: t.TempDir()})
	if err := w.Register(truthWorkflows()...); err != nil {
		t.Fatal(err)
	}
	if err := e.Register(w, false); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(s.ctx); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := w.Stop(ctx); err != nil {
				t.Errorf("stop worker: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	key := t.Name()
	r := truthRuns{stopWorker: stop}
	r.completed = s.start("truth-json", key)
	r.failed = s.start("truth-fail", key)
	r.waiting = s.start("truth-wait", key+"/w")
	r.canceled = s.start("truth-wait", key+"/c")
	f, err := openflow.Parse([]byte(truthFlow))
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.Start(s.ctx, s.c, f, nil, "truth.flow.json")
	if err != nil {
		t.Fatal(err)
	}
	r.flow = h.ID
	s.waitStatus(r.completed, "completed")
	s.waitStatus(r.failed, "failed")
	s.waitStatus(r.flow, "failed")
	for _, id := range []string{r.waiting, r.canceled} {
		s.until("run "+id+" to wait for its signal", func() bool {
			var steps struct {
				Data []struct{ Kind, Status string }
			}
			s.apiJSON("/v1/runs/"+id+"/steps", &steps)
			for _, st := range steps.Data {
				if st.Kind == "signal-wait" && st.Status == "running" {
					return true
				}
			}
			return false
		})
	}
	if _, err := s.c.CancelRun(s.ctx, r.canceled); err != nil {
		t.Fatal(err)
	}
	r.origin = s.start("truth-json", key+"/origin")
	s.waitStatus(r.origin, "completed")
	fork, err := s.c.ForkRun(s.ctx, r.origin, "compare")
	if err != nil {
		t.Fatal(err)
	}
	r.fork = fork.ID
	return r
}

// apiJSON reads an API route into v, failing the test unless it answers
// 200; it returns the raw body.
func (s *site) apiJSON(path string, v any) []byte {
	s.t.Helper()
	raw, status := s.apiRead(path, v)
	if status != http.StatusOK {
		s.t.Fatalf("GET %s answered %d: %s", path, status, raw)
	}
	return raw
}

// apiRead reads an API route, and into v when it answers 200.
func (s *site) apiRead(path string, v any) ([]byte, int) {
	s.t.Helper()
	req, err := http.NewRequestWithContext(s.ctx, http.MethodGet, s.url+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(res.Body); err != nil {
		s.t.Fatal(err)
	}
	if res.StatusCode == http.StatusOK && v != nil {
		if err := json.Unmarshal(buf.Bytes(), v); err != nil {
			s.t.Fatalf("GET %s: %v", path, err)
		}
	}
	return buf.Bytes(), res.StatusCode
}

// apiRun is what the truth test reads of the API's answer for a run.
type apiRun struct {
	Run struct {
		ID         string          `json:"id"`
		Status     string          `json:"status"`
		Parked     bool            `json:"parked"`
		Error      json.RawMessage `json:"error"`
		Output     json.RawMessage `json:"output"`
		Attempts   int             `json:"attempts"`
		CreatedAt  time.Time       `json:"createdAt"`
		StartedAt  *time.Time      `json:"startedAt"`
		ForkedFrom *struct {
			RunID    string `json:"runId"`
			FromStep string `json:"fromStep"`
		} `json:"forkedFrom"`
		Forks []string `json:"forks"`
	}
	RawRun []byte
	Steps  []struct {
		ID        string          `json:"id"`
		StepName  string          `json:"stepName"`
		Kind      string          `json:"kind"`
		Status    string          `json:"status"`
		Abandoned bool            `json:"abandoned"`
		Output    json.RawMessage `json:"output"`
		Error     json.RawMessage `json:"error"`
		StartedAt *time.Time      `json:"startedAt"`
	}
	Streams []struct {
		Stream string `json:"stream"`
		Chunks int    `json:"chunks"`
		Closed bool   `json:"closed"`
	}
	// Shown are the chunks with data each stream's read shows.
	Shown map[string]int
}

// readAPI reads run id's answers from the API.
func (s *site) readAPI(id string) apiRun {
	s.t.Helper()
	var a apiRun
	a.RawRun = s.apiJSON("/v1/runs/"+id, &a.Run)
	var steps struct {
		Data json.RawMessage `json:"data"`
	}
	s.apiJSON("/v1/runs/"+id+"/steps?limit=1000&resolveData=all", &steps)
	if err := json.Unmarshal(steps.Data, &a.Steps); err != nil {
		s.t.Fatal(err)
	}
	var streams struct {
		Data json.RawMessage `json:"data"`
	}
	s.apiJSON("/v1/runs/"+id+"/streams", &streams)
	if err := json.Unmarshal(streams.Data, &a.Streams); err != nil {
		s.t.Fatal(err)
	}
	a.Shown = map[string]int{}
	for _, st := range a.Streams {
		var chunks struct {
			Data []struct {
				Data   []byte `json:"data"`
				Closes bool   `json:"closes"`
			} `json:"data"`
		}
		s.apiJSON("/v1/runs/"+id+"/streams/"+url.PathEscape(st.Stream)+"?limit=1000", &chunks)
		for _, c := range chunks.Data {
			if len(c.Data) > 0 || !c.Closes {
				a.Shown[st.Stream]++
			}
		}
	}
	return a
}

// pageFacts is what a run's page shows, read from its DOM.
type pageFacts struct {
	Badge string `json:"badge"`
	// RunError is the text of the run's error in the overview (red), ""
	// when none is shown; ErrorJSON the overview's Error block.
	RunError  string `json:"runError"`
	ErrorJSON string `json:"errorJSON"`
	Output    string `json:"output"`
	Attempts  []struct {
		ID, State, Text string
	} `json:"attempts"`
	Streams  map[string]string `json:"streams"`
	Text     string            `json:"text"`
	Created  string            `json:"created"`
	Started  string            `json:"started"`
	Claims   string            `json:"claims"`
	ForkedOf string            `json:"forkedOf"`
	Forks    []string          `json:"forks"`
	JSONText []string          `json:"jsonText"`
}

// readPage is the script that reads a run page's pageFacts.
const readPage = `(() => {
  const q = s => document.querySelector(s);
  const t = e => e ? e.textContent.trim() : "";
  // fact is the datetime of the time in the overview's fact labelled dt.
  const fact = dt => {
    const d = [...document.querySelectorAll('#run-overview dl.facts dt')].find(e => e.textContent.trim() === dt);
    const time = d && d.nextElementSibling.querySelector('time');
    return time ? time.getAttribute('datetime') : "";
  };
  const facts = {
    badge: t(q('#run-head .badge')),
    runError: t(q('#run-overview .error-view')),
    errorJSON: t(q('#run-error')),
    output: t(q('#run-output')),
    attempts: [...document.querySelectorAll('#run-steps tr.attempt')].map(tr => ({ID: tr.id, State: t(tr.querySelector('.badge')), Text: t(tr)})),
    streams: Object.fromEntries([...document.querySelectorAll('#run-streams .stream-block')].map(b => [b.querySelector('pre').dataset.streamName || b.querySelector('pre').id.replace(/^stream-/, ''), t(b.querySelector('h3 .muted'))])),
    text: document.body.innerText,
    created: fact('Created'),
    started: fact('Started'),
    claims: (() => { const d = [...document.querySelectorAll('#run-overview dl.facts dt')].find(e => e.textContent.trim() === 'Claims'); return d ? d.nextElementSibling.textContent.trim() : "" })(),
    forkedOf: (q('#run-overview [data-fact="forked-from"] a') || {}).getAttribute?.('href') || "",
    forks: [...document.querySelectorAll('#run-overview [data-fact="forks"] a')].map(a => a.getAttribute('href')),
    jsonText: [...document.querySelectorAll('pre.json')].map(p => p.textContent),
  };
  return facts;
})()`

// TestTruth checks, on both backends, every run page against the API's
// answer for the same run (see above), and saves screenshots of them
// under /tmp/shots-truth.
func TestTruth(t *testing.T) {
	eachBackend(t, siteOptions{noWorker: true}, func(t *testing.T, s *site) {
		runs := newTruthRuns(t, s)
		b := newTab(t, s)
		backendName := filepath.Base(t.Name())
		look := func(t *testing.T, name, id string) (apiRun, pageFacts) {
			t.Helper()
			b.t, s.t = t, t
			a := s.readAPI(id)
			b.open("/runs/" + id)
			p := eval[pageFacts](b, readPage)
			shot(b, backendName+"-"+name)
			checkAgainstAPI(t, a, p)
			return a, p
		}

		t.Run("a retried step error is not the error of a waiting run", func(t *testing.T) {
			a, p := look(t, "waiting", runs.waiting)
			if a.Run.Status != "running" || !a.Run.Parked {
				t.Fatalf("the run is %s (parked %v), want a parked running run", a.Run.Status, a.Run.Parked)
			}
			if !strings.Contains(p.Text, "connection reset by peer") {
				t.Errorf("the page does not show the failed attempt's error at all:\n%s", p.Text)
			}
		})
		t.Run("a canceled run shows neither a step's error as its own nor a wait going on", func(t *testing.T) {
			a, p := look(t, "canceled", runs.canceled)
			if a.Run.Status != "canceled" {
				t.Fatalf("the run is %s, want canceled", a.Run.Status)
			}
			for _, at := range p.Attempts {
				if strings.Contains(at.Text, "until") || at.State == "waiting" {
					t.Errorf("attempt %s of the canceled run still reads as waiting: %q", at.ID, at.Text)
				}
			}
		})
		t.Run("a module that raised is failed, and so is its flow", func(t *testing.T) {
			a, p := look(t, "openflow", runs.flow)
			failedModule := false
			for _, at := range p.Attempts {
				failedModule = failedModule || at.State == "failed"
			}
			if !failedModule || a.Run.Status != "failed" {
				t.Errorf("run %s, attempts %+v: want the raising module's attempt failed", a.Run.Status, p.Attempts)
			}
		})
		t.Run("JSON shows > < & as they are", func(t *testing.T) {
			a, p := look(t, "completed", runs.completed)
			if bytes.Contains(a.RawRun, []byte(`\u003e`)) {
				t.Errorf("the API escapes > as \\u003e: %s", a.RawRun)
			}
			if !strings.Contains(p.Output, `"a > b && c < d"`) {
				t.Errorf("the page shows the output as %q", p.Output)
			}
		})
		t.Run("a stream counts its chunks, not its close", func(t *testing.T) {
			a, p := look(t, "stream", runs.completed)
			if len(a.Streams) != 1 || a.Streams[0].Chunks != 2 {
				t.Errorf("the API counts %+v, want 2 chunks in log", a.Streams)
			}
			if got := p.Streams["log"]; !strings.HasPrefix(got, "2 chunk") {
				t.Errorf("the page counts %q, want 2 chunks", got)
			}
		})
		t.Run("a fork shows where it came from, and its origin its forks", func(t *testing.T) {
			fa, fp := look(t, "fork", runs.fork)
			oa, op := look(t, "fork-origin", runs.origin)
			if fa.Run.ForkedFrom == nil || fa.Run.ForkedFrom.RunID != runs.origin || fa.Run.ForkedFrom.FromStep != "compare" {
				t.Errorf("the API's forkedFrom of the fork is %+v, want %s from compare", fa.Run.ForkedFrom, runs.origin)
			}
			if len(oa.Run.Forks) != 1 || oa.Run.Forks[0] != runs.fork {
				t.Errorf("the API's forks of the origin are %q, want [%s]", oa.Run.Forks, runs.fork)
			}
			if fp.ForkedOf != "/runs/"+runs.origin || len(op.Forks) != 1 || op.Forks[0] != "/runs/"+runs.fork {
				t.Errorf("the fork's page links %q, the origin's %q", fp.ForkedOf, op.Forks)
			}
		})
		t.Run("a failed run shows its error", func(t *testing.T) {
			look(t, "failed", runs.failed)
		})
		t.Run("a pending fork did not start before it was created", func(t *testing.T) {
			runs.stopWorker() // nobody claims the fork
			s.t = t
			fork, err := s.c.ForkRun(s.ctx, runs.origin, "compare")
			if err != nil {
				t.Fatal(err)
			}
			a, p := look(t, "fork-pending", fork.ID)
			if a.Run.Status != "pending" || p.Started != "" {
				t.Errorf("the fork is %s and the page says it started at %q; want pending, not started", a.Run.Status, p.Started)
			}
			oa, _ := look(t, "fork-origin-2", runs.origin)
			if len(oa.Run.Forks) != 2 || oa.Run.Forks[1] != fork.ID {
				t.Errorf("the origin lists forks %q, want the second %s", oa.Run.Forks, fork.ID)
			}
		})
		t.Run("the runs list agrees with the API", func(t *testing.T) {
			b.t, s.t = t, t
			b.open("/?size=100")
			shot(b, backendName+"-list")
			type row struct{ ID, Badge, Claims, ForkOf string }
			rows := eval[[]row](b, `[...document.querySelectorAll('#runs-table tbody tr')].map(tr => ({
				ID: tr.querySelector('.run-link').textContent.trim(),
				Badge: tr.querySelector('.state .badge').textContent.trim(),
				Claims: tr.querySelector('td.num').textContent.trim(),
				ForkOf: [...tr.querySelectorAll('.child-of')].filter(d => d.textContent.startsWith('fork of')).map(d => d.querySelector('a').getAttribute('href'))[0] || "",
			}))`)
			seen := 0
			for _, r := range rows {
				a := s.readAPI(r.ID)
				seen++
				want := a.Run.Status
				if want == "running" && a.Run.Parked {
					want = "waiting"
				}
				if r.Badge != want {
					t.Errorf("run %s: the list's badge %q, the API says %s (parked %v)", r.ID, r.Badge, a.Run.Status, a.Run.Parked)
				}
				claims := a.Run.Attempts
				if a.Run.ForkedFrom != nil {
					claims--
				}
				if r.Claims != fmt.Sprint(claims) {
					t.Errorf("run %s: the list counts %s claims, the API's attempts are %d (a fork: %v)", r.ID, r.Claims, a.Run.Attempts, a.Run.ForkedFrom != nil)
				}
				if f := a.Run.ForkedFrom; (f == nil) != (r.ForkOf == "") || (f != nil && r.ForkOf != "/runs/"+f.RunID) {
					t.Errorf("run %s: the list links origin %q, the API says %+v", r.ID, r.ForkOf, f)
				}
			}
			if seen < 8 {
				t.Errorf("the list shows %d runs, want the test's 8 at least", seen)
			}
		})
	})
}

// checkAgainstAPI compares what a run's page shows with the API's answer
// for the run.
func checkAgainstAPI(t *testing.T, a apiRun, p pageFacts) {
	t.Helper()
	// The badge: the API's status, a parked running run waiting.
	want := a.Run.Status
	if want == "running" && a.Run.Parked {
		want = "waiting"
	}
	if p.Badge != want {
		t.Errorf("badge %q, the API says %s (parked %v)", p.Badge, a.Run.Status, a.Run.Parked)
	}
	// The error: a run's error is its outcome, so only a failed run has
	// one, in the API and on the page alike.
	if hasErr := len(a.Run.Error) > 0 && string(a.Run.Error) != "null"; hasErr != (a.Run.Status == "failed") {
		t.Errorf("the API's %s run has error %s", a.Run.Status, a.Run.Error)
	}
	if (p.RunError != "") != (a.Run.Status == "failed") {
		t.Errorf("the page of a %s run shows the run's error %q", a.Run.Status, p.RunError)
	}
	if a.Run.Status == "failed" {
		var e struct{ Message string }
		_ = json.Unmarshal(a.Run.Error, &e)
		if e.Message == "" || !strings.Contains(p.RunError, e.Message) {
			t.Errorf("the page shows the run's error as %q, the API as %s", p.RunError, a.Run.Error)
		}
	}
	// The attempts: one row per attempt the API lists (marks aside), in
	// the state the API's answer implies.
	var rows []string
	for _, s := range a.Steps {
		if s.Kind == "retry" {
			continue
		}
		rows = append(rows, s.ID)
		var got *struct{ ID, State, Text string }
		for i := range p.Attempts {
			if p.Attempts[i].ID == s.ID {
				got = &p.Attempts[i]
			}
		}
		if got == nil {
			t.Errorf("attempt %s (%s) is not on the page", s.ID, s.StepName)
			continue
		}
		w := stateOf(a, s.Kind, s.Status, s.Abandoned, s.Output)
		if got.State != w {
			t.Errorf("attempt %s (%s %s %s, abandoned %v) shows %q, want %q", s.ID, s.StepName, s.Kind, s.Status, s.Abandoned, got.State, w)
		}
		// A failed attempt shows its error: the attempt's, or the
		// module's of an OpenFlow module that raised.
		if w == "failed" {
			var e struct{ Message string }
			_ = json.Unmarshal(s.Error, &e)
			if e.Message == "" {
				var rec struct {
					Result struct{ Error struct{ Message string } }
				}
				_ = json.Unmarshal(s.Output, &rec)
				e.Message = rec.Result.Error.Message
			}
			if first, _, _ := strings.Cut(e.Message, "\n"); first == "" || !strings.Contains(got.Text, first) {
				t.Errorf("failed attempt %s (%s) does not show its error %q: %q", s.ID, s.StepName, e.Message, got.Text)
			}
		}
	}
	if len(rows) != len(p.Attempts) {
		t.Errorf("the page shows %d attempts, the API %d", len(p.Attempts), len(rows))
	}
	// No internal step name shows.
	if strings.Contains(p.Text, "__fork:") || strings.Contains(p.Text, "__retry:") {
		t.Errorf("the page shows an internal mark's name:\n%s", p.Text)
	}
	// The streams: the chunks the API's read shows.
	for _, st := range a.Streams {
		if st.Chunks != a.Shown[st.Stream] {
			t.Errorf("the API counts %d chunks in %s, its read shows %d", st.Chunks, st.Stream, a.Shown[st.Stream])
		}
		if got, w := p.Streams[st.Stream], fmt.Sprintf("%d chunk", a.Shown[st.Stream]); !strings.HasPrefix(got, w) {
			t.Errorf("stream %s: the page says %q, the API's read shows %d chunks", st.Stream, got, a.Shown[st.Stream])
		}
	}
	// JSON shows as the value is: no HTML escapes, and the output is the
	// API's value.
	for _, j := range p.JSONText {
		if strings.Contains(j, `\u003c`) || strings.Contains(j, `\u003e`) || strings.Contains(j, `\u0026`) {
			t.Errorf("the page shows JSON with HTML escapes: %s", j)
		}
	}
	if len(a.Run.Output) > 0 && !sameJSONValue(a.Run.Output, []byte(p.Output)) {
		t.Errorf("the page shows output %s, the API %s", p.Output, a.Run.Output)
	}
	// Started is never before created (a fork's copied attempts ran in
	// its origin, before the fork was made).
	if p.Started != "" && p.Created != "" && p.Started < p.Created {
		t.Errorf("the page says the run started at %s, before it was created at %s", p.Started, p.Created)
	}
	// The claims: the API's attempts, less the one a fork starts with.
	claims := a.Run.Attempts
	if a.Run.ForkedFrom != nil {
		claims--
	}
	if p.Claims != fmt.Sprint(claims) {
		t.Errorf("the page counts %q claims; the API's attempts are %d (a fork: %v)", p.Claims, a.Run.Attempts, a.Run.ForkedFrom != nil)
	}
	// The lineage: the API's, both ways.
	if f := a.Run.ForkedFrom; f != nil && p.ForkedOf != "/runs/"+f.RunID {
		t.Errorf("the page links the origin %q, the API says %s", p.ForkedOf, f.RunID)
	}
	if len(p.Forks) != len(a.Run.Forks) {
		t.Errorf("the page links forks %q, the API lists %q", p.Forks, a.Run.Forks)
	}
	for i := range min(len(p.Forks), len(a.Run.Forks)) {
		if p.Forks[i] != "/runs/"+a.Run.Forks[i] {
			t.Errorf("the page links fork %q, the API lists %s", p.Forks[i], a.Run.Forks[i])
		}
	}
}

// stateOf is the state an attempt is in by the API's answer: a function
// attempt completed with an OpenFlow module record of status failure
// failed (the module raised); a running attempt of a canceled run
// canceled; one of a failed run, or one the API marks abandoned,
// abandoned; a running wait of a live run waiting.
func stateOf(a apiRun, kind, status string, abandoned bool, output json.RawMessage) string {
	var rec struct {
		Status string          `json:"status"`
		Result json.RawMessage `json:"result"`
	}
	switch {
	case status == "completed" && kind == "function" && json.Unmarshal(output, &rec) == nil && rec.Status == "failure" && len(rec.Result) > 0:
		return "failed"
	case status != "running":
		return status
	case a.Run.Status == "canceled":
		return "canceled"
	case abandoned || a.Run.Status == "failed" || a.Run.Status == "completed":
		return "abandoned"
	case kind != "function":
		return "waiting"
	}
	return "running"
}

// sameJSONValue reports whether a and b are the same JSON value.
func sameJSONValue(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return bytes.Equal(ja, jb)
}

// shot saves the page as /tmp/shots-truth/<name>.png.
func shot(b *tab, name string) {
	b.t.Helper()
	buf, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := "/tmp/shots-truth"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
		b.t.Fatal(err)
	}
}
