package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestPauseFromARunPageIsGuardedLikeCancel: a pause posted from another
// origin is refused and changes nothing; from the dashboard's page it
// pauses the run with its reason and says so, and resume undoes it; a
// canceled run's page offers to resume it.
func TestPauseFromARunPageIsGuardedLikeCancel(t *testing.T) {
	eachBackend(t, siteOptions{noWorker: true}, func(t *testing.T, s *site) {
		id := s.start("greet", "ada")
		c := s.client()
		s.must(c, http.StatusForbidden, "POST", "/runs/"+id+"/pause", url.Values{"reason": {"x"}}, "Sec-Fetch-Site", "cross-site")
		if run := s.waitStatus(id, "pending"); run.Paused() {
			t.Fatal("a cross-site pause paused the run")
		}
		p := s.must(c, http.StatusSeeOther, "POST", "/runs/"+id+"/pause", url.Values{"reason": {"hold on"}}, "Origin", s.url)
		if loc := p.header.Get("Location"); loc != "/runs/"+id+"?done=paused" {
			t.Errorf("pause redirected to %q", loc)
		}
		run := s.waitStatus(id, "pending")
		if !run.Paused() || run.PauseReason == nil || *run.PauseReason != "hold on" {
			t.Fatalf("after the pause: paused %v, reason %v", run.Paused(), run.PauseReason)
		}
		p = s.must(c, http.StatusOK, "GET", "/runs/"+id+"?done=paused", nil)
		for _, want := range []string{"Run paused", `class="badge s-paused"`, "hold on", `data-open="dlg-resume"`} {
			if !strings.Contains(p.body, want) {
				t.Errorf("the paused run's page lacks %q", want)
			}
		}
		if strings.Contains(p.body, `data-open="dlg-pause"`) {
			t.Error("the paused run's page offers Pause again")
		}
		s.must(c, http.StatusSeeOther, "POST", "/runs/"+id+"/resume", url.Values{}, "Origin", s.url)
		if run := s.waitStatus(id, "pending"); run.Paused() {
			t.Fatal("the run is still paused after Resume")
		}

		s.must(c, http.StatusSeeOther, "POST", "/runs/"+id+"/cancel", url.Values{}, "Origin", s.url)
		p = s.must(c, http.StatusOK, "GET", "/runs/"+id, nil)
		if !strings.Contains(p.body, "Resume from where it stopped") {
			t.Error("a canceled run's page offers no resume")
		}
	})
}
