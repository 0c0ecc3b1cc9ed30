package dashboard_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/openworkflow-go/openworkflow/backend"
)

// attempt is what a hostile page saw of one request: the status it could
// read (0 for an opaque no-cors answer, -1 when the browser refused to
// let it read at all) and whether the answer showed the victim's run.
type attempt struct {
	Name   string `json:"name"`
	Status int    `json:"status"`
	Leaked bool   `json:"leaked"`
}

// attack is the script of a hostile page: every way a page may try to
// change or read a server of base without being allowed to — simple
// requests (text/plain, forms) that need no preflight, the dashboard's
// own forms with the visitor's cookies, JSON with a preflight, and
// reads. It resolves to the attempts.
const attack = `(async (base, runID) => {
  const out = [];
  const attempt = async (name, url, init) => {
    try {
      const r = await fetch(url, Object.assign({credentials: 'include'}, init));
      let body = '';
      try { body = await r.text(); } catch (e) {}
      out.push({name, status: r.status, leaked: body.includes(runID)});
    } catch (e) {
      out.push({name, status: -1, leaked: false});
    }
  };
  const start = JSON.stringify({workflowName: 'greet', input: 'mallory'});
  const form = (o) => new URLSearchParams(o);
  await attempt('POST /v1/runs as text/plain', base + '/v1/runs', {method: 'POST', mode: 'no-cors', headers: {'Content-Type': 'text/plain'}, body: start});
  await attempt('POST /v1/runs as a form', base + '/v1/runs', {method: 'POST', mode: 'no-cors', body: form({workflowName: 'greet'})});
  await attempt('POST /v1/runs as JSON', base + '/v1/runs', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: start});
  await attempt('POST /v1/runs/{id}/cancel', base + '/v1/runs/' + runID + '/cancel', {method: 'POST', mode: 'no-cors'});
  await attempt('POST /v1/signals as text/plain', base + '/v1/signals', {method: 'POST', mode: 'no-cors', headers: {'Content-Type': 'text/plain'}, body: '{"signal":"go"}'});
  await attempt('the dashboard start form', base + '/runs', {method: 'POST', mode: 'no-cors', body: form({workflow: 'greet', input: '"mallory"'})});
  await attempt('the dashboard cancel form', base + '/runs/' + runID + '/cancel', {method: 'POST', mode: 'no-cors', body: form({})});
  await attempt('GET /v1/runs', base + '/v1/runs', {});
  await attempt('GET /v1/runs/{id}', base + '/v1/runs/' + runID, {});
  await attempt('GET / (the dashboard)', base + '/', {});
  await attempt('GET /runs/{id} (the run page)', base + '/runs/' + runID, {});
  return out;
})(%q, %q)`

// TestBrowserHostilePagesCanNeitherReadNorChange: in Chromium, a page of
// another origin (another loopback port) and a page whose name was
// rebound to 127.0.0.1 (DNS rebinding, here Chromium's host resolver
// rules mapping evil.test) can neither change nor read anything through
// /v1 or the dashboard — with a token (the visitor signed in, so its
// cookie is there to abuse) and without one. The backend is checked
// afterwards: no run started, the victim's run not canceled.
func TestBrowserHostilePagesCanNeitherReadNorChange(t *testing.T) {
	// The hostile site: an empty page on a loopback port of its own.
	evil := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><title>cats</title><p>Nothing to see.")
	}), ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go evil.Serve(ln) // owned by the test: closed below
	t.Cleanup(func() { evil.Close() })
	evilURL := "http://" + ln.Addr().String()

	for _, c := range []struct {
		name  string
		token string
	}{{"without a token", ""}, {"with a token and a signed-in visitor", "browser-token-0123456789"}} {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, siteOptions{token: c.token, noWorker: true}, func(t *testing.T, s *site) {
				victim := s.start("greet", "ada")
				b := newTab(t, s, chromedp.Flag("host-resolver-rules", "MAP evil.test 127.0.0.1"))
				if c.token != "" {
					b.open("/login")
					b.setValue("token", c.token)
					b.clickToLoad(`.login button[type=submit]`)
					if got := eval[string](b, `location.pathname`); got != "/" {
						t.Fatalf("signing in left the browser at %s", got)
					}
				}
				port := strings.TrimPrefix(s.url, "http://127.0.0.1:")
				for _, origin := range []struct {
					name, page, base string
				}{
					{"a page of another origin", evilURL + "/", s.url},
					{"a DNS-rebound page", "http://evil.test:" + port + "/", ""},
				} {
					t.Run(origin.name, func(t *testing.T) {
						b.do("open "+origin.page, chromedp.Navigate(origin.page))
						if origin.base == "" {
							if got := eval[string](b, `location.host`); got != "evil.test:"+port {
								t.Fatalf("the rebound page is at %s", got)
							}
						}
						ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
						defer cancel()
						got, err := chromedp.Run(ctx, chromedp.Evaluate[[]attempt](fmt.Sprintf(attack, origin.base, victim), chromedp.EvalAwaitPromise))
						if err != nil {
							t.Fatalf("run the attack: %v", err)
						}
						if len(got) != 11 {
							t.Fatalf("the attack made %d attempts, want 11: %+v", len(got), got)
						}
						for _, a := range got {
							if a.Leaked {
								t.Errorf("%s: the page read the victim's run (status %d)", a.Name, a.Status)
							}
							if a.Status >= 200 && a.Status < 300 && strings.HasPrefix(a.Name, "GET /v1") {
								t.Errorf("%s: the page read a %d answer of the API", a.Name, a.Status)
							}
						}
						page, err := s.c.ListRuns(s.ctx, backend.ListWorkflowRunsParams{})
						if err != nil {
							t.Fatal(err)
						}
						if len(page.Data) != 1 {
							t.Errorf("the backend holds %d runs after the attack, want the victim's alone", len(page.Data))
						}
						run, err := s.c.GetRun(s.ctx, victim)
						if err != nil {
							t.Fatal(err)
						}
						if run.Status != backend.RunPending {
							t.Errorf("the victim's run is %s after the attack, want pending", run.Status)
						}
					})
				}
				// The visitor's own use still works after all that.
				if c.token != "" {
					b.open("/runs/" + victim)
					if got := eval[string](b, `location.pathname`); got != "/runs/"+victim {
						t.Errorf("the visitor's own run page went to %s", got)
					}
				}
			})
		})
	}
}
