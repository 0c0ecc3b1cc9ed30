package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
)

// raw sends one request as a browser or another client would, with the
// Host and headers given (not the server's token), and returns its
// status and body.
func (s *server) raw(method, path, host, body string, header ...string) response {
	s.t.Helper()
	req, err := http.NewRequestWithContext(s.ctx, method, s.url+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// runCount is the number of runs in the backend, read there (not
// through the API under test).
func (s *server) runCount() int {
	s.t.Helper()
	page, err := s.c.ListRuns(s.ctx, backend.ListWorkflowRunsParams{Limit: 1000})
	if err != nil {
		s.t.Fatal(err)
	}
	return len(page.Data)
}

const startBody = `{"workflowName":"echo","input":"x"}`

// TestWithoutATokenOtherSitesCanNeitherReadNorChange: a server without a
// token is for its own machine; a web page of another site, or one that
// rebinds its name to 127.0.0.1, can neither change nor read anything
// through /v1 — while programs and same-origin pages can.
func TestWithoutATokenOtherSitesCanNeitherReadNorChange(t *testing.T) {
	crossSite := []string{"Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"}
	eachBackend(t, api.Options{CORSOrigins: []string{"http://app.example:3000"}}, func(t *testing.T, s *server) {
		local := strings.TrimPrefix(s.url, "http://")
		refused := []struct {
			name               string
			method, path, host string
			contentType, body  string
			header             []string
		}{
			{"a cross-site text/plain POST cannot start a run", "POST", "/v1/runs", "", "text/plain", startBody, crossSite},
			{"a cross-site form POST cannot start a run", "POST", "/v1/runs", "", "application/x-www-form-urlencoded", startBody, crossSite},
			{"a cross-site JSON POST cannot start a run", "POST", "/v1/runs", "", "application/json", startBody, crossSite},
			{"a page of another local port cannot start a run", "POST", "/v1/runs", "", "text/plain", startBody, []string{"Origin", "http://127.0.0.1:1", "Sec-Fetch-Site", "same-site"}},
			{"an old browser's cross-site POST (Origin only) cannot start a run", "POST", "/v1/runs", "", "text/plain", startBody, []string{"Origin", "http://evil.example"}},
			{"a cross-site POST cannot send a signal", "POST", "/v1/signals", "", "text/plain", `{"signal":"s"}`, crossSite},
			{"a cross-site POST cannot resume a hook", "POST", "/v1/hooks/some-hook", "", "text/plain", `{}`, crossSite},
			{"a cross-site DELETE cannot delete a schedule", "DELETE", "/v1/schedules/nightly", "", "", "", crossSite},
			{"a DNS-rebound page cannot list the runs", "GET", "/v1/runs", "evil.example", "", "", nil},
			{"a DNS-rebound page with a port cannot read the API", "GET", "/v1/runs/counts", "evil.example:" + strings.Split(local, ":")[1], "", "", nil},
			{"a DNS-rebound page cannot start a run, even same-origin", "POST", "/v1/runs", "evil.example", "application/json", startBody, []string{"Origin", "http://evil.example", "Sec-Fetch-Site", "same-origin"}},
		}
		for _, c := range refused {
			t.Run(c.name, func(t *testing.T) {
				before := s.runCount()
				h := append([]string{"Content-Type", c.contentType}, c.header...)
				r := s.raw(c.method, c.path, c.host, c.body, h...)
				if r.status != http.StatusForbidden {
					t.Fatalf("answered %d, want 403: %s", r.status, r.body)
				}
				if e := r.apiError(t); e.Code != api.CodeForbidden || e.Message == "" {
					t.Errorf("the refusal is %+v, want code forbidden and a message", e)
				}
				if n := s.runCount(); n != before {
					t.Errorf("the backend holds %d runs after the refusal, %d before", n, before)
				}
			})
		}
		allowed := []struct {
			name   string
			host   string
			header []string
		}{
			{"a program (no browser headers) starts a run", "", nil},
			{"a same-origin page starts a run", "", []string{"Origin", s.url, "Sec-Fetch-Site", "same-origin"}},
			{"a page of a configured CORS origin starts a run", "", []string{"Origin", "http://app.example:3000", "Sec-Fetch-Site", "cross-site"}},
			{"a request to localhost starts a run", "localhost:" + strings.Split(local, ":")[1], nil},
		}
		for _, c := range allowed {
			t.Run(c.name, func(t *testing.T) {
				before := s.runCount()
				h := append([]string{"Content-Type", "application/json"}, c.header...)
				if r := s.raw("POST", "/v1/runs", c.host, startBody, h...); r.status != http.StatusCreated {
					t.Fatalf("answered %d, want 201: %s", r.status, r.body)
				}
				if n := s.runCount(); n != before+1 {
					t.Errorf("the backend holds %d runs, want %d", n, before+1)
				}
			})
		}
		t.Run("a third party delivers a webhook, the hook's token being its credential", func(t *testing.T) {
			tok := "webhook-from-a-third-party"
			run := s.start("approval", map[string]any{"Token": tok, "N": 1})
			s.until("the hook", func() bool { return s.hookExists(tok) })
			r := s.raw("POST", "/v1/webhooks/"+tok, "hooks.example.net", "a=1", "Content-Type", "application/x-www-form-urlencoded", "Origin", "https://hooks.example.net")
			if r.status != http.StatusAccepted {
				t.Fatalf("answered %d, want 202: %s", r.status, r.body)
			}
			s.waitStatus(run.ID, "completed")
		})
	})
}

// TestJSONBodiesNeedAJSONContentType: where the API reads JSON it wants
// to be told so; a body sent as text or a form (what a page of another
// site can send without asking) is refused with 415 before it is read.
func TestJSONBodiesNeedAJSONContentType(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		for _, c := range []struct {
			contentType string
			want        int
		}{
			{"application/json", http.StatusCreated},
			{"application/json; charset=utf-8", http.StatusCreated},
			{"Application/JSON", http.StatusCreated},
			{"application/vnd.openworkflow+json", http.StatusCreated},
			{"text/plain", http.StatusUnsupportedMediaType},
			{"text/plain; charset=utf-8", http.StatusUnsupportedMediaType},
			{"application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
			{"multipart/form-data; boundary=x", http.StatusUnsupportedMediaType},
			{"", http.StatusUnsupportedMediaType},
			{"application/jsonp", http.StatusUnsupportedMediaType},
			{"json", http.StatusUnsupportedMediaType},
		} {
			t.Run("Content-Type "+c.contentType, func(t *testing.T) {
				before := s.runCount()
				r := s.raw("POST", "/v1/runs", "", startBody, "Content-Type", c.contentType)
				if r.status != c.want {
					t.Fatalf("answered %d, want %d: %s", r.status, c.want, r.body)
				}
				want := before
				if c.want == http.StatusCreated {
					want++
				} else if e := r.apiError(t); e.Code != api.CodeUnsupportedMediaType || !strings.Contains(e.Message, "application/json") {
					t.Errorf("the refusal %+v does not say to send application/json", e)
				}
				if n := s.runCount(); n != want {
					t.Errorf("the backend holds %d runs, want %d", n, want)
				}
			})
		}
		t.Run("an action whose body is optional takes none without a Content-Type", func(t *testing.T) {
			run := s.start("approval", map[string]any{"Token": "optional-body", "N": 1})
			s.must(http.StatusOK, "POST", "/v1/runs/"+run.ID+"/cancel", nil)
		})
		t.Run("an action whose body is optional refuses a form", func(t *testing.T) {
			run := s.start("approval", map[string]any{"Token": "optional-form", "N": 1})
			if r := s.raw("POST", "/v1/runs/"+run.ID+"/cancel", "", "", "Content-Type", "application/x-www-form-urlencoded"); r.status != http.StatusUnsupportedMediaType {
				t.Fatalf("answered %d, want 415: %s", r.status, r.body)
			}
			var got api.Run
			s.must(http.StatusOK, "GET", "/v1/runs/"+run.ID, nil).decode(t, &got)
			if got.Status == "canceled" {
				t.Errorf("the refused request canceled the run")
			}
		})
	})
}
