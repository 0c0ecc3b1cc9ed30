package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	ow "github.com/openworkflow-go/openworkflow"
)

// The browser tests drive the dashboard in headless Chromium (Debian's
// chromium package; .ci/run installs it), through chromedp, against the
// real wiring of `ow server` on both backends. OPENWORKFLOW_SKIP_BROWSER=1
// skips them; without it a missing Chromium fails them.

// chromiumPath finds Chromium, or skips or fails the test.
func chromiumPath(t testing.TB) string {
	t.Helper()
	if os.Getenv("OPENWORKFLOW_SKIP_BROWSER") == "1" {
		t.Skip("OPENWORKFLOW_SKIP_BROWSER=1: the dashboard's browser tests are skipped")
	}
	if p := os.Getenv("OPENWORKFLOW_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found for the dashboard's browser tests: install it (apt-get install -y chromium), set OPENWORKFLOW_CHROMIUM to its path, or set OPENWORKFLOW_SKIP_BROWSER=1 to skip these tests")
	return ""
}

// tab is one browser tab of a Chromium of its own, closed when the test
// ends. Page exceptions and Content-Security-Policy refusals fail the
// test.
type tab struct {
	t   testing.TB
	ctx context.Context
	s   *site

	mu         sync.Mutex
	exceptions []string
}

func newTab(t testing.TB, s *site, flags ...chromedp.ExecAllocatorOption) *tab {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, // tests run as root in CI
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900),
	)
	opts = append(opts, flags...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	if err := chromedp.Do(ctx); err != nil { // starts the browser, with no timeout
		cancel()
		cancelAlloc()
		t.Fatalf("start Chromium: %v", err)
	}
	b := &tab{t: t, ctx: ctx, s: s}
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() { // owned by the tab: it ends when the tab's context does
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			// Exceptions, and refusals of the Content-Security-Policy (an
			// inline style or script the page should not have).
			if m.IsException() || m.Source == "security" || strings.Contains(m.Text, "Content Security Policy") {
				b.mu.Lock()
				b.exceptions = append(b.exceptions, fmt.Sprintf("%s:%d %s", m.URL, m.Line+1, m))
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		<-done
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.exceptions {
			t.Errorf("the page threw or broke its policy: %s", e)
		}
	})
	return b
}

// do runs actions, failing the test after 30 s.
func (b *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// open loads path and waits for its load event.
func (b *tab) open(path string) {
	b.t.Helper()
	b.do("open "+path, chromedp.Navigate(b.s.url+path))
}

// clickToLoad clicks the element of a CSS selector and waits for the page
// it leads to (a link, or a form's submit) to load.
func (b *tab) clickToLoad(css string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	for attempt := 1; ; attempt++ {
		_, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(css))))
		// A page that updates itself (a run page follows its run) may
		// replace the element between its lookup and the click, before
		// anything was clicked: look it up again.
		if err != nil && attempt < 5 && strings.Contains(err.Error(), "Could not find node with given id") {
			continue
		}
		if err != nil {
			b.t.Fatalf("click %s and wait for the next page: %v", css, err)
		}
		return
	}
}

// eval evaluates a JavaScript expression into T.
func eval[T any](b *tab, js string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// until waits for a JavaScript condition to hold, failing the test after
// 60 s with what it waited for and the page's text. The wait is generous
// for a loaded machine (-race, other packages' tests on the same cores)
// and ends as soon as the condition holds. A poll cut short because the
// page navigated (its JavaScript context destroyed) polls the new page.
func (b *tab) until(what, js string) {
	b.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithDeadline(b.ctx, deadline.Add(5*time.Second))
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(time.Until(deadline)), chromedp.WithPollingInterval(50*time.Millisecond)))
		cancel()
		if err == nil {
			return
		}
		if navigatedAway(err) && time.Now().Before(deadline) {
			continue
		}
		text, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 3000) : ""`))
		b.t.Fatalf("waited 60 s for %s (%s): %v\npage text:\n%s", what, js, err, text)
	}
}

// navigatedAway reports whether err is Chromium's answer to a script run
// in a page that has since navigated.
func navigatedAway(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Cannot find context with specified id") ||
		strings.Contains(msg, "Execution context was destroyed")
}

// screenshot saves the whole page as a PNG under testdata/screenshots
// (git-ignored), to look at.
func (b *tab) screenshot(name string) {
	b.t.Helper()
	buf, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := filepath.Join("testdata", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", path)
}

// colorScheme emulates prefers-color-scheme: "light" or "dark".
func (b *tab) colorScheme(scheme string) {
	b.t.Helper()
	if _, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
	}); err != nil {
		b.t.Fatalf("emulate %s: %v", scheme, err)
	}
}

// setValue sets the value of the form field id as typing would (an
// input event follows, for the page's checks).
func (b *tab) setValue(id, value string) {
	b.t.Helper()
	eval[bool](b, `(() => { const el = document.getElementById(`+jsq(id)+`); el.value = `+jsq(value)+`; el.dispatchEvent(new Event('input', {bubbles: true})); return true })()`)
}

// jsq quotes s for JavaScript.
func jsq(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// rowCount is the number of rows of the runs list.
const rowCount = `document.querySelectorAll('#runs-table tbody tr').length`

// TestBrowser walks through the dashboard as an operator would, on both
// backends: the runs list (counts, filters, pages), a run's page, a
// running run's steps appearing live, cancel, retry, the start form and
// a hook's resume; it checks accessibility on the way and saves
// screenshots.
func TestBrowser(t *testing.T) {
	eachBackend(t, siteOptions{}, func(t *testing.T, s *site) {
		b := newTab(t, s)

		t.Run("the runs list counts, filters and pages", func(t *testing.T) {
			b.t = t
			failing.Store(s.t.Name()+"/list", true)
			t.Cleanup(func() { failing.Delete(s.t.Name() + "/list") })
			later := time.Now().Add(time.Hour)
			inputs := make([]any, 28)
			for i := range inputs {
				inputs[i] = fmt.Sprintf("later-%d", i)
			}
			if _, err := s.c.StartManyByName(s.ctx, "greet", "", inputs, ow.WithStartAt(later)); err != nil {
				t.Fatal(err)
			}
			failed := s.start("flaky", s.t.Name()+"/list")
			s.waitStatus(failed, "failed")
			var done []string
			for _, name := range []string{"ada", "grace", "linus"} {
				done = append(done, s.start("greet", name))
			}
			for _, id := range done {
				s.waitStatus(id, "completed")
			}

			b.open("/")
			b.until("the counts", `document.querySelector('#counts .count .count-n').textContent === '32'`)
			if n := eval[int](b, rowCount); n != 25 {
				t.Fatalf("the first page has %d rows, want 25", n)
			}
			if got := eval[string](b, `document.querySelector('#counts .c-failed .count-n').textContent`); got != "1" {
				t.Errorf("failed count %q, want 1", got)
			}
			first := eval[string](b, `document.querySelector('#runs-table a.run-link').textContent`)
			if first != done[2] {
				t.Errorf("the newest run listed is %s, want %s", first, done[2])
			}
			if got := eval[string](b, `[...document.querySelectorAll('#runs-table tbody tr')].find(r => r.textContent.includes('later-') || r.querySelector('.s-scheduled')).querySelector('.badge').textContent`); got != "scheduled" {
				t.Errorf("a run delayed by an hour is shown %q, want scheduled", got)
			}

			// Older, then newer again.
			b.clickToLoad(`a[rel=next]`)
			if n := eval[int](b, rowCount); n != 7 {
				t.Errorf("the second page has %d rows, want 7", n)
			}
			if eval[bool](b, `document.body.innerText.includes(`+jsq(first)+`)`) {
				t.Errorf("the second page repeats the first page's newest run")
			}
			b.clickToLoad(`a[rel=prev]`)
			if n := eval[int](b, rowCount); n != 25 {
				t.Errorf("back on the newer page: %d rows, want 25", n)
			}
			if got := eval[string](b, `document.querySelector('#runs-table a.run-link').textContent`); got != first {
				t.Errorf("back on the newer page, the first run is %s, want %s", got, first)
			}

			// Filter by status, with the form.
			b.do("choose failed", chromedp.SetValue(chromedp.CSS("#f-status"), "failed"))
			b.clickToLoad(`.filters button[type=submit]`)
			if n := eval[int](b, rowCount); n != 1 {
				t.Fatalf("status failed lists %d rows, want 1", n)
			}
			if !eval[bool](b, `document.querySelector('#runs-table tbody tr').textContent.includes(`+jsq(failed)+`)`) {
				t.Errorf("status failed does not list %s", failed)
			}
			if !eval[bool](b, `document.querySelector('#counts .c-failed').getAttribute('aria-current') === 'true'`) {
				t.Errorf("the failed card is not marked current")
			}
			// By workflow name.
			b.do("filter greet", chromedp.SetValue(chromedp.CSS("#f-status"), ""), chromedp.SetValue(chromedp.CSS("#f-workflow"), "greet"))
			b.clickToLoad(`.filters button[type=submit]`)
			if n := eval[int](b, `[...document.querySelectorAll('#runs-table tbody tr .wf')].filter(e => e.textContent === 'greet').length`); n != 25 {
				t.Errorf("workflow greet lists %d greet rows of %d, want 25", n, eval[int](b, rowCount))
			}

			// The first page is live: a run started now appears without a
			// reload, and the counts follow.
			b.open("/")
			b.until("the counts", `document.querySelector('#counts .count .count-n').textContent === '32'`)
			eval[bool](b, `window.__notReloaded = true`)
			fresh := s.start("greet", "live-row")
			b.until("the new run in the list", `document.querySelector('#runs-table a.run-link').textContent === `+jsq(fresh))
			b.until("the counts following", `document.querySelector('#counts .count .count-n').textContent === '33'`)
			if !eval[bool](b, `window.__notReloaded === true`) {
				t.Errorf("the list reloaded to show the new run")
			}

			// Open a run from the list.
			b.do("filter greet again", chromedp.SetValue(chromedp.CSS("#f-workflow"), "greet"))
			b.clickToLoad(`.filters button[type=submit]`)
			b.clickToLoad(`#runs-table a.run-link`)
			if got := eval[string](b, `location.pathname`); got != "/runs/"+fresh {
				t.Errorf("the first link opened %s", got)
			}
			if got := eval[string](b, `document.querySelector('h1').textContent`); got != "greet" {
				t.Errorf("the run page's title is %q", got)
			}
			b.until("the output", `document.querySelector('#run-output') && document.querySelector('#run-output').textContent.includes('hello, LIVE-ROW')`)

			// The search box opens a run by id.
			b.do("search", chromedp.SendKeys(chromedp.ID("q"), done[0]))
			ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
			defer cancel()
			if _, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.KeyEvent("\r"))); err != nil {
				t.Fatalf("search: %v", err)
			}
			if got := eval[string](b, `location.pathname`); got != "/runs/"+done[0] {
				t.Errorf("searching %s opened %s", done[0], got)
			}
		})

		t.Run("a running run's steps and stream appear live", func(t *testing.T) {
			b.t = t
			key := s.t.Name() + "/live"
			id := s.start("steps", key)
			b.open("/runs/" + id)
			b.until("step-1 running", `document.querySelector('#run-steps tr.attempt') !== null`)
			eval[bool](b, `window.__notReloaded = true`)
			// The end notice shows for 5 s only: a loaded machine may poll
			// after it is gone, so every text the status line takes is kept.
			eval[bool](b, `(() => { const el = document.getElementById('live-status'); window.__said = []; new MutationObserver(() => window.__said.push(el.textContent)).observe(el, {childList: true, characterData: true, subtree: true}); return true })()`)
			s.gates.open(key + "/1")
			b.until("step-2 appearing", `document.querySelectorAll('#run-steps tr.attempt').length >= 2`)
			b.until("step 1's stream", `document.querySelector('#stream-log') && document.querySelector('#stream-log').textContent.includes('step 1 done')`)
			s.gates.open(key + "/2")
			s.gates.open(key + "/3")
			b.until("the run completing", `document.querySelector('#run-head .badge').textContent === 'completed'`)
			b.until("the timeline's three steps", `document.querySelectorAll('#run-timeline .tl-row').length === 5`)
			b.until("the live view ending", `window.__said.some((t) => t.includes('live updates stopped'))`)
			b.until("the notice of the end going away", `document.getElementById('live-status').textContent === ''`)
			if !eval[bool](b, `window.__notReloaded === true`) {
				t.Errorf("the page reloaded to show the steps")
			}
		})

		t.Run("cancel a running run", func(t *testing.T) {
			b.t = t
			id := s.start("stuck", "c")
			b.open("/runs/" + id)
			b.until("the step running", `document.querySelector('#run-head .badge').textContent === 'running' && document.querySelector('#run-steps tr.attempt') !== null`)
			b.do("open the cancel dialog", chromedp.Click(chromedp.CSS(`[data-open=dlg-cancel]`)))
			b.until("the dialog", `document.getElementById('dlg-cancel').open`)
			b.clickToLoad(`#dlg-cancel button[type=submit]`)
			if got := eval[string](b, `document.querySelector('.notice').textContent`); got != "Run canceled." {
				t.Errorf("notice %q", got)
			}
			if got := eval[string](b, `document.querySelector('#run-head .badge').textContent`); got != "canceled" {
				t.Errorf("the canceled run is shown %q", got)
			}
			s.waitStatus(id, "canceled")
		})

		t.Run("retry a failed run from its failed step", func(t *testing.T) {
			b.t = t
			key := s.t.Name() + "/retry"
			failing.Store(key, true)
			id := s.start("flaky", key)
			s.waitStatus(id, "failed")
			failing.Delete(key)
			b.open("/runs/" + id)
			if n := eval[int](b, `[...document.querySelectorAll('#run-timeline .tl-row')].find(r => r.textContent.includes('charge')).querySelectorAll('rect.b-failed').length`); n != 2 {
				t.Errorf("the timeline shows %d failed attempts of charge, want 2", n)
			}
			if !eval[bool](b, `document.querySelector('#run-timeline line.gap') !== null`) {
				t.Errorf("the timeline shows no back-off between the attempts")
			}
			if !eval[bool](b, `document.querySelector('#run-overview .error-msg').textContent.includes('card declined')`) {
				t.Errorf("the error is not shown")
			}
			b.do("open the retry dialog", chromedp.Click(chromedp.CSS(`[data-open=dlg-retry]`)))
			b.until("the dialog", `document.getElementById('dlg-retry').open`)
			b.clickToLoad(`#dlg-retry button[type=submit]`)
			if got := eval[string](b, `document.querySelector('.notice') ? document.querySelector('.notice').textContent : document.querySelector('.alert').textContent`); !strings.HasPrefix(got, "Run retried") {
				t.Fatalf("after retry the page says %q", got)
			}
			b.until("the retried run completing", `document.querySelector('#run-head .badge').textContent === 'completed'`)
			if got := eval[int](b, `[...document.querySelectorAll('#run-steps tr.attempt')].filter(r => r.textContent.includes('reserve')).length`); got != 1 {
				t.Errorf("reserve ran %d times; a retry keeps completed steps", got)
			}
			if !eval[bool](b, `document.querySelector('#run-steps tr.retry-row') !== null && document.querySelector('#run-timeline line.retry-mark') !== null && document.querySelector('#run-timeline line.gap.retried') !== null`) {
				t.Errorf("the retry is not marked in the attempts and the timeline")
			}
			b.screenshot(strings.TrimPrefix(s.t.Name(), "TestBrowser/") + "-retried")
		})

		t.Run("fork a failed run from its failed step", func(t *testing.T) {
			b.t = t
			key := s.t.Name() + "/fork"
			failing.Store(key, true)
			id := s.start("flaky", key)
			s.waitStatus(id, "failed")
			failing.Delete(key)
			b.open("/runs/" + id)
			b.do("open the fork dialog", chromedp.Click(chromedp.CSS(`[data-open=dlg-fork]`)))
			b.until("the dialog", `document.getElementById('dlg-fork').open`)
			if got := eval[string](b, `[...document.querySelectorAll('#fork-step option')].map(o => o.value).join(',')`); got != "reserve,charge" {
				t.Errorf("the fork dialog offers the steps %q, want reserve,charge", got)
			}
			b.setValue("fork-step", "charge")
			b.clickToLoad(`#dlg-fork button[type=submit]`)
			if got := eval[string](b, `document.querySelector('.notice') ? document.querySelector('.notice').textContent : document.querySelector('.alert').textContent`); !strings.HasPrefix(got, "Run forked from run "+id) {
				t.Fatalf("after the fork the page says %q", got)
			}
			if got := eval[string](b, `document.getElementById('run-id').textContent`); got == id {
				t.Fatalf("after the fork the page shows the forked run, not the fork")
			}
			b.until("the fork completing", `document.querySelector('#run-head .badge').textContent === 'completed'`)
			if got := eval[int](b, `[...document.querySelectorAll('#run-steps tr.attempt')].filter(r => r.textContent.includes('reserve')).length`); got != 1 {
				t.Errorf("the fork shows %d attempts of reserve, want its one reused result", got)
			}
			if got := eval[string](b, `document.querySelector('#run-steps tr.retry-row').textContent`); !strings.Contains(got, "Forked") {
				t.Errorf("the fork's mark reads %q, want it to say the run was forked", got)
			}
			b.screenshot(strings.TrimPrefix(s.t.Name(), "TestBrowser/") + "-forked")
		})

		t.Run("start a run from the form", func(t *testing.T) {
			b.t = t
			b.open("/runs/new")
			b.do("type the workflow", chromedp.SendKeys(chromedp.ID("workflow"), "greet"))
			b.setValue("input", "")
			b.do("type bad JSON", chromedp.SendKeys(chromedp.ID("input"), `{"bad"`))
			b.until("the JSON error", `document.getElementById('input-error').textContent.startsWith('Not valid JSON')`)
			b.do("try to send", chromedp.Click(chromedp.CSS(`.start-form button[type=submit]`)))
			if eval[bool](b, `document.getElementById('dlg-confirm').open`) || eval[string](b, `location.pathname`) != "/runs/new" {
				t.Fatalf("a form with bad JSON went on")
			}
			b.setValue("input", `"hopper"`)
			b.until("the error clearing", `document.getElementById('input-error').textContent === ''`)
			b.do("send", chromedp.Click(chromedp.CSS(`.start-form button[type=submit]`)))
			b.until("the confirmation", `document.getElementById('dlg-confirm').open`)
			if !eval[bool](b, `document.querySelector('#dlg-confirm .dlg-summary').textContent.includes('greet')`) {
				t.Errorf("the confirmation does not show what is sent")
			}
			b.clickToLoad(`#dlg-confirm button[value=ok]`)
			if got := eval[string](b, `document.querySelector('.notice').textContent`); got != "Run started." {
				t.Errorf("notice %q", got)
			}
			b.until("the run completing live", `document.querySelector('#run-head .badge').textContent === 'completed' && document.querySelector('#run-output').textContent.includes('hello, HOPPER')`)
		})

		t.Run("resume a hook", func(t *testing.T) {
			b.t = t
			tok := "tok-" + strings.ReplaceAll(s.t.Name(), "/", "-")
			id := s.start("approval", map[string]string{"Token": tok})
			b.open("/runs/" + id)
			b.until("the hook awaited", `document.querySelector('#run-hooks .awaited') !== null && document.querySelector('#run-head .badge').textContent === 'waiting'`)
			b.do("open the resume dialog", chromedp.Click(chromedp.CSS(`#run-hooks button[data-open=dlg-hook]`)))
			b.until("the dialog with the token", `document.getElementById('dlg-hook').open && document.getElementById('hook-token').value === `+jsq(tok))
			// A payload the page's check lets through but the API refuses
			// (a lone surrogate cannot be stored): the dialog opens again
			// with the API's message and what was typed.
			b.setValue("hook-payload", `{"note": "\ud800"}`)
			b.clickToLoad(`#dlg-hook button[type=submit]`)
			b.until("the dialog again, with the problem", `document.getElementById('dlg-hook').open && document.querySelector('#dlg-hook .alert') !== null`)
			if got := eval[string](b, `document.querySelector('#dlg-hook .alert').textContent`); !strings.Contains(got, "cannot be stored") {
				t.Errorf("the refused payload's dialog says %q", got)
			}
			if got := eval[string](b, `document.getElementById('hook-token').value`); got != tok {
				t.Errorf("the dialog lost the token: %q", got)
			}
			b.setValue("hook-payload", `{"approved": true, "by": "ops"}`)
			b.clickToLoad(`#dlg-hook button[type=submit]`)
			if got := eval[string](b, `document.querySelector('.notice').textContent`); got != "Hook resumed: payload #1 was delivered." {
				t.Errorf("notice %q", got)
			}
			b.until("the run completing with the payload", `document.querySelector('#run-head .badge').textContent === 'completed' && document.querySelector('#run-output').textContent.includes('"approved": true')`)
		})

		t.Run("a DAG run's graph shows each step's state and the compensations, live", func(t *testing.T) {
			b.t = t
			key := s.t.Name() + "/dag"
			h, err := s.dag.Start(s.ctx, orderWorkflow, orderInput{Key: key, Fail: "send-email", Hold: true})
			if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimPrefix(s.t.Name(), "TestBrowser/")
			node := func(step string) string {
				return `document.querySelector('#run-dag a.dag-node[data-step=` + jsq(step) + `]')`
			}
			state := func(step string) string { return node(step) + `?.getAttribute('data-status')` }
			b.open("/runs/" + h.ID)
			// Held in release-stock: the run compensates, the later steps
			// are undone already, in reverse order.
			b.until("the run compensating", state("validate-stock")+` === 'compensating' && `+state("charge-card")+` === 'compensated'`)
			want := map[string]string{
				"validate-fraud": "completed", "charge-card": "compensated", "emit-invoice": "compensated", "send-email": "failed",
			}
			for step, status := range want {
				if got := eval[string](b, state(step)); got != status {
					t.Errorf("while compensating, %s is drawn %q, want %q", step, got, status)
				}
			}
			for _, badge := range []string{"#run-dag h2 .badge", "#run-head .badge"} {
				if got := eval[string](b, `document.querySelector(`+jsq(badge)+`).textContent`); got != "compensating" {
					t.Errorf("%s says %q while compensating", badge, got)
				}
			}
			if got := eval[string](b, `document.querySelector('#run-dag .dag-chain').textContent`); !strings.Contains(got, "↺1 emit-invoice (void-invoice, completed) → ↺2 charge-card (refund-card, completed) → ↺3 validate-stock (release-stock, running)") {
				t.Errorf("the compensation chain reads %q", got)
			}
			// The compensation chain is numbered: void-invoice, refund-card, release-stock.
			for step, badge := range map[string]string{"emit-invoice": "↺1 void-invoice · completed", "charge-card": "↺2 refund-card · completed", "validate-stock": "↺3 release-stock · running"} {
				if got := eval[string](b, node(step)+`.querySelector('.dag-comp text').textContent`); got != badge {
					t.Errorf("%s's compensation badge reads %q, want %q", step, got, badge)
				}
			}
			if got := eval[string](b, node("send-email")+`.querySelector('.dag-error').textContent`); got != "the mail server refused the m…" {
				t.Errorf("send-email's box shows the error %q", got)
			}
			if got := eval[string](b, node("charge-card")+`.getAttribute('aria-label')`); !strings.Contains(got, "compensated") || !strings.Contains(got, "refund-card completed") {
				t.Errorf("charge-card's accessible name %q does not say it was compensated", got)
			}
			// The graph is laid out in layers, left to right.
			x := func(step string) int { return eval[int](b, `+`+node(step)+`.querySelector('rect').getAttribute('x')`) }
			if !(x("validate-stock") == x("validate-fraud") && x("validate-fraud") < x("charge-card") && x("charge-card") < x("emit-invoice") && x("emit-invoice") < x("send-email") && x("send-email") == x("update-analytics")) {
				t.Errorf("layers are not left to right: %d %d %d %d %d %d", x("validate-stock"), x("validate-fraud"), x("charge-card"), x("emit-invoice"), x("send-email"), x("update-analytics"))
			}
			if n := eval[int](b, `document.querySelectorAll('#run-dag path.dag-edge').length`); n != 5 {
				t.Errorf("%d edges drawn, want 5", n)
			}
			b.screenshot(name + "-dag-compensating")

			// Released: the live view turns the run compensated.
			eval[bool](b, `window.__notReloaded = true`)
			s.gates.open(key + "/release")
			b.until("the run compensated", state("validate-stock")+` === 'compensated' && document.querySelector('#run-dag h2 .badge').textContent === 'compensated'`)
			if !eval[bool](b, `window.__notReloaded === true`) {
				t.Errorf("the page reloaded to show the end of the compensation")
			}
			b.screenshot(name + "-dag")
			for _, scheme := range []string{"dark", "light"} {
				b.colorScheme(scheme)
				b.open("/runs/" + h.ID)
				b.until("the page's script", `document.readyState === 'complete'`)
				if eval[bool](b, `document.querySelector('[data-open=dlg-retry]') !== null`) {
					t.Errorf("a compensated DAG run offers a retry from its failed step")
				}
				var check struct {
					Problems []string
					Texts    int
				}
				raw := eval[string](b, a11yProblems)
				if err := json.Unmarshal([]byte(raw), &check); err != nil {
					t.Fatalf("a11y check answer %s: %v", raw, err)
				}
				for _, p := range check.Problems {
					t.Errorf("DAG run (%s): %s", scheme, p)
				}
				if scheme == "dark" {
					b.screenshot(name + "-dag-dark")
				}
			}
		})

		t.Run("keyboard, labels and contrast in both themes", func(t *testing.T) {
			b.t = t
			parent := s.start("parent", "ada")
			s.waitStatus(parent, "completed")
			for _, scheme := range []string{"light", "dark"} {
				b.colorScheme(scheme)
				for _, path := range []string{"/", "/runs/" + parent, "/runs/new", "/workers"} {
					b.open(path)
					b.until("the page's script", `document.readyState === 'complete'`)
					var check struct {
						Problems []string
						Texts    int // text elements whose contrast was measured
					}
					raw := eval[string](b, a11yProblems)
					if err := json.Unmarshal([]byte(raw), &check); err != nil {
						t.Fatalf("a11y check answer %s: %v", raw, err)
					}
					if check.Texts < 10 {
						t.Errorf("%s (%s): the contrast check measured only %d texts", path, scheme, check.Texts)
					}
					for _, p := range check.Problems {
						t.Errorf("%s (%s): %s", path, scheme, p)
					}
				}
			}
			b.colorScheme("light")
			// The keyboard: the first Tab reaches the skip link, "/" the
			// search box, j the first run of the list, Enter opens it.
			b.open("/")
			b.do("tab", chromedp.KeyEvent("\t"))
			if got := eval[string](b, `document.activeElement.textContent`); got != "Skip to content" {
				t.Errorf("the first Tab focuses %q, want the skip link", got)
			}
			b.do("slash", chromedp.KeyEvent("/"))
			if got := eval[string](b, `document.activeElement.id`); got != "q" {
				t.Errorf("/ focuses %q, want the search box", got)
			}
			b.do("escape the box", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`))
			b.do("j", chromedp.KeyEvent("j"))
			want := eval[string](b, `document.querySelector('#runs-table a.run-link').textContent`)
			if got := eval[string](b, `document.activeElement.textContent`); got != want {
				t.Errorf("j focuses %q, want the first run %q", got, want)
			}
			ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
			defer cancel()
			if _, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.KeyEvent("\r"))); err != nil {
				t.Fatalf("Enter on the focused run: %v", err)
			}
			if got := eval[string](b, `location.pathname`); got != "/runs/"+want {
				t.Errorf("Enter opened %s", got)
			}
		})

		t.Run("screenshots of the runs page and a run with retries and a child", func(t *testing.T) {
			b.t = t
			parent := s.start("parent", "grace")
			s.waitStatus(parent, "completed")
			name := strings.TrimPrefix(s.t.Name(), "TestBrowser/")
			b.open("/")
			b.until("the counts", `!document.querySelector('#counts').hasAttribute('data-counts')`)
			b.screenshot(name + "-runs")
			b.open("/runs/" + parent)
			b.until("the timeline", `document.querySelector('#run-timeline rect.b-failed') !== null && document.querySelector('#run-children a') !== null`)
			b.screenshot(name + "-run")
			b.colorScheme("dark")
			b.open("/runs/" + parent)
			b.screenshot(name + "-run-dark")
			b.open("/")
			b.until("the counts", `!document.querySelector('#counts').hasAttribute('data-counts')`)
			b.screenshot(name + "-runs-dark")
			b.colorScheme("light")
			// The workers view, with a worker holding a run; the start form
			// with an error.
			held := s.start("stuck", "screenshot")
			s.until("the worker to hold the run", func() bool {
				run, err := s.c.GetRun(s.ctx, held)
				return err == nil && run.WorkerID != nil
			})
			// The record's last heartbeat may predate the claim: the run
			// held counts all the same. It may also count runs of the
			// steps above that have ended since (the record's in-use is
			// the larger until the next heartbeat), and the page is
			// rendered once: reload it until the heartbeat has caught up.
			workerShown := `[...document.querySelectorAll('section.worker')].some(s => s.querySelector('.badge').textContent === 'running' && s.textContent.includes('1 of 8 (7 free)') && s.textContent.includes(` + jsq(held) + `))`
			for deadline := time.Now().Add(60 * time.Second); ; {
				b.open("/workers")
				if eval[bool](b, workerShown) {
					break
				}
				if time.Now().After(deadline) {
					b.until("the worker holding the run shown running, 1 of 8 slots in use", workerShown) // fails, with the page's text
				}
				time.Sleep(500 * time.Millisecond)
			}
			b.screenshot(name + "-workers")
			if _, err := s.c.CancelRun(s.ctx, held); err != nil {
				t.Fatal(err)
			}
			b.open("/runs/new")
			b.do("type", chromedp.SendKeys(chromedp.ID("workflow"), "greet"))
			b.setValue("input", "{\n  \"name\": \"ada\",\n}")
			b.setValue("delay", "soon")
			b.screenshot(name + "-start")
		})
	})
}

// TestBrowserSignIn: with a token, the browser is sent to the sign-in
// form, refused with a wrong token, and let in with the right one.
func TestBrowserSignIn(t *testing.T) {
	const token = "browser-token-0123456789"
	eachBackend(t, siteOptions{token: token}, func(t *testing.T, s *site) {
		b := newTab(t, s)
		id := s.start("greet", "ada")
		b.open("/runs/" + id)
		if got := eval[string](b, `location.pathname`); got != "/login" {
			t.Fatalf("without a session the run page shows %s, want /login", got)
		}
		b.do("a wrong token", chromedp.SendKeys(chromedp.ID("token"), "wrong"))
		b.clickToLoad(`.login button[type=submit]`)
		if !eval[bool](b, `document.querySelector('.alert').textContent.includes('not this server')`) {
			t.Errorf("a wrong token is not refused with a message")
		}
		b.setValue("token", token)
		b.clickToLoad(`.login button[type=submit]`)
		if got := eval[string](b, `location.pathname`); got != "/runs/"+id {
			t.Fatalf("after sign-in the browser is at %s, want the run", got)
		}
		if eval[bool](b, `document.cookie.includes('ow_session')`) {
			t.Errorf("the session cookie is readable by scripts")
		}
		b.until("the run completing live", `document.querySelector('#run-head .badge').textContent === 'completed'`)
	})
}

// a11yProblems lists, as JSON {problems: [...], texts: n}, what a page lacks for
// keyboard and screen-reader users and for contrast: form controls
// without a label, links and buttons without a name, and text whose
// contrast with its background is below WCAG AA (4.5:1, 3:1 for large
// text).
const a11yProblems = `(() => {
  const problems = [];
  const visible = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== 'hidden'; };
  for (const el of document.querySelectorAll('input, select, textarea')) {
    if (el.type === 'hidden' || el.closest('dialog:not([open])')) continue;
    if (!(el.labels && el.labels.length) && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby')) problems.push('no label: ' + el.outerHTML.slice(0, 120));
  }
  for (const el of document.querySelectorAll('a[href], button')) {
    if (el.closest('dialog:not([open])') || el.closest('svg')) continue;
    if (!(el.textContent.trim() || el.getAttribute('aria-label'))) problems.push('no name: ' + el.outerHTML.slice(0, 120));
  }
  const parse = (c) => { const m = c.match(/rgba?\(([^)]+)\)/); if (!m) return null; const p = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number); return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 }; };
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }; return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); };
  const bgOf = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) { const c = parse(getComputedStyle(e).backgroundColor); if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; } }
    let out = parse(getComputedStyle(document.documentElement).backgroundColor) || { r: 255, g: 255, b: 255, a: 1 };
    for (const c of layers.reverse()) out = { r: c.r * c.a + out.r * (1 - c.a), g: c.g * c.a + out.g * (1 - c.a), b: c.b * c.a + out.b * (1 - c.a), a: 1 };
    return out;
  };
  const seen = new Set();
  let texts = 0;
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!n.textContent.trim() || !el || seen.has(el) || el.closest('svg, dialog:not([open]), .visually-hidden, [aria-hidden=true]') || !visible(el)) continue;
    seen.add(el);
    const st = getComputedStyle(el);
    if (el.closest('button:disabled') || parseFloat(st.opacity) < 1) continue;
    const fg = parse(st.color); if (!fg) continue;
    texts++;
    const bg = bgOf(el);
    const c = { r: fg.r * fg.a + bg.r * (1 - fg.a), g: fg.g * fg.a + bg.g * (1 - fg.a), b: fg.b * fg.a + bg.b * (1 - fg.a) };
    const l1 = lum(c), l2 = lum(bg);
    const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
    const size = parseFloat(st.fontSize), bold = parseInt(st.fontWeight, 10) >= 700;
    const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    if (ratio < need) problems.push('contrast ' + ratio.toFixed(2) + ' < ' + need + ': "' + n.textContent.trim().slice(0, 40) + '" (' + st.color + ' on rgb(' + [bg.r, bg.g, bg.b].map(Math.round).join(',') + '))');
  }
  return JSON.stringify({problems, texts});
})()`
