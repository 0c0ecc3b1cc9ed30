package dashboard_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserPauseResume: on both backends, an operator pauses a waiting
// run from its page with a reason, sees it paused on the page and in the
// list, and resumes it, in Chromium; a screenshot of the paused run's page
// is saved.
func TestBrowserPauseResume(t *testing.T) {
	eachBackend(t, siteOptions{}, func(t *testing.T, s *site) {
		b := newTab(t, s)
		name := strings.TrimPrefix(t.Name(), "TestBrowserPauseResume/")
		id := s.start("waiter", name+"-pause")
		b.open("/runs/" + id)
		b.until("the run waiting", `document.querySelector('#run-head .badge').textContent === 'waiting'`)

		b.do("open the pause dialog", chromedp.Click(chromedp.CSS(`[data-open=dlg-pause]`)))
		b.until("the dialog", `document.getElementById('dlg-pause').open`)
		b.setValue("pause-reason", "checking the payment provider")
		b.clickToLoad(`#dlg-pause button[type=submit]`)
		if got := eval[string](b, `document.querySelector('.notice').textContent`); !strings.HasPrefix(got, "Run paused") {
			t.Errorf("notice %q", got)
		}
		if got := eval[string](b, `document.querySelector('#run-head .badge').textContent`); got != "paused" {
			t.Fatalf("the paused run is shown %q", got)
		}
		if got := eval[string](b, `document.querySelector('[data-fact=paused]').textContent`); !strings.Contains(got, "checking the payment provider") {
			t.Errorf("the paused fact says %q", got)
		}
		if eval[bool](b, `!!document.querySelector('[data-open=dlg-pause]')`) || !eval[bool](b, `!!document.querySelector('[data-open=dlg-resume]')`) {
			t.Error("a paused run's page offers Pause, or no Resume")
		}
		if got := eval[string](b, `document.querySelector('#run-overview .explain').textContent`); !strings.Contains(got, "deadline keeps running") {
			t.Errorf("the explanation %q does not give the deadline rule", got)
		}
		b.screenshot(name + "-paused-run")
		for _, scheme := range []string{"dark", "light"} {
			b.colorScheme(scheme)
			b.open("/runs/" + id)
			b.until("the page's script", `document.readyState === 'complete'`)
			var check struct {
				Problems []string
				Texts    int
			}
			raw := eval[string](b, a11yProblems)
			if err := json.Unmarshal([]byte(raw), &check); err != nil {
				t.Fatalf("a11y check answer %s: %v", raw, err)
			}
			for _, p := range check.Problems {
				t.Errorf("paused run (%s): %s", scheme, p)
			}
		}

		b.open("/")
		b.until("the list", `document.querySelector('#runs-table') !== null`)
		row := `[...document.querySelectorAll('#runs-table tbody tr')].find(r => r.textContent.includes(` + jsq(id) + `))`
		if got := eval[string](b, `(`+row+`).querySelector('.badge').textContent`); got != "paused" {
			t.Errorf("the list shows the paused run as %q", got)
		}
		b.screenshot(name + "-paused-list")

		b.open("/runs/" + id)
		b.do("open the resume dialog", chromedp.Click(chromedp.CSS(`[data-open=dlg-resume]`)))
		b.until("the dialog", `document.getElementById('dlg-resume').open`)
		b.clickToLoad(`#dlg-resume button[type=submit]`)
		if got := eval[string](b, `document.querySelector('.notice').textContent`); got != "Run resumed." {
			t.Errorf("notice %q", got)
		}
		if got := eval[string](b, `document.querySelector('#run-head .badge').textContent`); got == "paused" {
			t.Errorf("the resumed run is still shown paused")
		}
		run := s.waitStatus(id, "running")
		if run.Paused() {
			t.Errorf("the run is still paused after Resume: %+v", run)
		}
	})
}
