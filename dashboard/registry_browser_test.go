package dashboard_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// TestBrowserRegistry: in a real browser, the workers page lists the
// site's worker while it holds no run (idle, every slot free, its
// workflows) and a worker that stopped heartbeating as gone; the start
// form lists the registered workflows and choosing one fills in its name
// and example input (as ?workflow= does without script); and the page of
// a run of a workflow no live worker serves says so. Screenshots under
// testdata/screenshots.
func TestBrowserRegistry(t *testing.T) {
	eachBackend(t, siteOptions{}, func(t *testing.T, s *site) {
		name := strings.TrimPrefix(s.t.Name(), "TestBrowserRegistry/")
		b := newTab(t, s)
		wr, ok := s.b.(backend.WorkerRegistry)
		if !ok {
			t.Fatalf("%T keeps no registry of workers", s.b)
		}
		// A worker of another host that stopped heartbeating: its interval
		// of 1 ms has long passed three times when the page is read.
		host, _ := os.Hostname()
		crashed := backend.WorkerRecord{ID: "crashed-" + name, Host: "other-" + host, PID: 4242, SDK: "openworkflow-go", SDKVersion: "v0.9.0",
			State: backend.WorkerRunning, Concurrency: 4, InUse: 1, HeartbeatInterval: time.Millisecond,
			Workflows: []backend.RegisteredWorkflow{{Name: "greet"}}}
		if err := wr.PutWorker(s.ctx, crashed); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // past 3 of its 1 ms intervals, by the wall clock the backend reads

		b.open("/workers")
		b.until("the idle worker and the gone one",
			`[...document.querySelectorAll('section.worker')].some(s => s.querySelector('.badge').textContent === 'idle' && s.textContent.includes('0 of 8 (8 free)') && s.textContent.includes('greet')) &&
			 [...document.querySelectorAll('section.worker')].some(s => s.textContent.includes(`+jsq(crashed.ID)+`) && s.querySelector('.badge').textContent === 'gone')`)
		if got := eval[string](b, `document.querySelector('section.worker .badge').textContent`); got != "idle" {
			t.Errorf("the first worker listed is %q, want the idle one before the gone one", got)
		}
		if !eval[bool](b, `document.querySelector('.lede').textContent.includes('TypeScript workers write no record')`) {
			t.Error("the workers page does not say that TypeScript workers are not in the registry")
		}
		b.screenshot(name + "-workers-idle")

		b.open("/runs/new")
		options := eval[[]string](b, `[...document.querySelectorAll('#registered option')].map(o => o.dataset.name || '').filter(Boolean)`)
		if !containsAll(options, "greet", "parent", "stuck") {
			t.Fatalf("the start form offers %v, want the registered workflows (greet, parent, stuck…)", options)
		}
		b.choose("registered", "greet")
		b.until("the example filled in", `document.getElementById('workflow').value === 'greet' && document.getElementById('input').value === '"Ada Lovelace"'`)
		b.screenshot(name + "-start-registered")

		b.open("/runs/new?workflow=greet")
		if got := eval[string](b, `document.getElementById('input').value`); got != `"Ada Lovelace"` {
			t.Errorf("/runs/new?workflow=greet fills the input with %q, want greet's example", got)
		}

		id := s.start("nobody-serves", "x")
		b.open("/runs/" + id)
		b.until("the unserved notice", `(document.querySelector('.unserved') || {textContent: ''}).textContent.includes('no live worker serves workflow "nobody-serves"')`)
		b.screenshot(name + "-run-unserved")
		served := s.start("greet", "Bo")
		s.waitStatus(served, "completed")
		b.open("/runs/" + served)
		if eval[bool](b, `document.querySelector('.unserved') !== null`) {
			t.Error("a finished run of a served workflow says nobody serves it")
		}
	})
}

func containsAll(have []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

// choose chooses the option of select id whose data-name is name,
// firing change as a user's choice does.
func (b *tab) choose(id, name string) {
	b.t.Helper()
	eval[bool](b, fmt.Sprintf(`(() => { const s = document.getElementById(%s);
		const o = [...s.options].find(o => o.dataset.name === %s);
		s.value = o.value; o.selected = true;
		s.dispatchEvent(new Event('change', {bubbles: true})); return true })()`, jsq(id), jsq(name)))
}
