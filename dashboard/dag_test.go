package dashboard_test

import (
	"encoding/json"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/dag"
)

// dagNodeRE matches a DAG node of the run page: its step, its status, and
// its content (state line, compensation badge).
var dagNodeRE = regexp.MustCompile(`(?s)<a class="dag-node n-[^"]*"[^>]*? data-step="([^"]*)" data-status="([^"]*)">(.*?)</a>`)

// dagBadgeRE matches a node's compensation badge: its class and text.
var dagBadgeRE = regexp.MustCompile(`(?s)<g class="dag-comp c-([^"]*)">.*?<text[^>]*>([^<]*)</text></g>`)

// TestDAGPageAgreesWithTheAPI draws the page of a completed and of a
// compensated DAG run and holds every node against the API's own answer
// for the same run (GET /v1/runs/{id}/dag): the same status per step; a
// compensation badge with the compensation's state once it began, and
// never "pending" on a run that is not compensating ("not needed" on a
// completed run); the failed step drawn failed, not compensated, though
// its own compensation ran; and no Retry button on a compensated run.
func TestDAGPageAgreesWithTheAPI(t *testing.T) {
	eachBackend(t, siteOptions{}, func(t *testing.T, s *site) {
		c := s.client()
		check := func(t *testing.T, id string) (api.DAGRun, map[string]string, string) {
			t.Helper()
			var st api.DAGRun
			raw := s.must(c, http.StatusOK, "GET", "/v1/runs/"+id+"/dag", nil, "Accept", "application/json").body
			if err := json.Unmarshal([]byte(raw), &st); err != nil {
				t.Fatalf("the API's /dag: %v\n%s", err, raw)
			}
			page := s.must(c, http.StatusOK, "GET", "/runs/"+id, nil).body
			badges := map[string]string{}
			seen := map[string]bool{}
			for _, m := range dagNodeRE.FindAllStringSubmatch(page, -1) {
				step, drawn, inner := html.UnescapeString(m[1]), m[2], m[3]
				seen[step] = true
				ss, ok := st.Steps[step]
				if !ok {
					t.Errorf("the page draws step %q, which the API does not know", step)
					continue
				}
				if drawn != string(ss.Status) {
					t.Errorf("step %s is drawn %s; the API says %s", step, drawn, ss.Status)
				}
				b := dagBadgeRE.FindStringSubmatch(inner)
				var def dag.Step
				for _, d := range st.Definition.Steps {
					if d.Name == step {
						def = d
					}
				}
				switch {
				case def.Compensate == "" && b != nil:
					t.Errorf("step %s has no compensate handler, but a badge %q", step, b[2])
				case def.Compensate == "":
				case b == nil:
					t.Errorf("step %s has compensate handler %s, but no badge", step, def.Compensate)
				case ss.Compensation != nil:
					if b[1] != string(ss.Compensation.Status) || !strings.HasSuffix(html.UnescapeString(b[2]), "· "+string(ss.Compensation.Status)) {
						t.Errorf("step %s's badge is %s %q; the API says its compensation is %s", step, b[1], b[2], ss.Compensation.Status)
					}
				case st.Status != dag.StatusCompensating && (b[1] == "pending" || strings.Contains(b[2], "pending")):
					t.Errorf("step %s's compensation never ran, and the %s run's page reads it %s %q", step, st.Status, b[1], b[2])
				}
				if b != nil {
					badges[step] = html.UnescapeString(b[2])
				}
			}
			for name := range st.Steps {
				if !seen[name] {
					t.Errorf("the page does not draw step %s", name)
				}
			}
			return st, badges, page
		}

		start := func(t *testing.T, in orderInput) string {
			t.Helper()
			h, err := s.dag.Start(s.ctx, orderWorkflow, in)
			if err != nil {
				t.Fatal(err)
			}
			return h.ID
		}

		t.Run("completed", func(t *testing.T) {
			id := start(t, orderInput{Key: t.Name()})
			s.waitStatus(id, "completed")
			st, badges, _ := check(t, id)
			if st.Status != dag.StatusCompleted {
				t.Fatalf("run %s, want completed", st.Status)
			}
			for _, step := range []string{"validate-stock", "charge-card", "emit-invoice"} {
				if !strings.HasSuffix(badges[step], "· not needed") {
					t.Errorf("on a completed run %s's badge reads %q, want … · not needed", step, badges[step])
				}
			}
		})

		t.Run("compensated", func(t *testing.T) {
			id := start(t, orderInput{Key: t.Name(), Fail: "emit-invoice"})
			s.waitStatus(id, "failed")
			st, _, page := check(t, id)
			if st.Status != dag.StatusCompensated {
				t.Fatalf("run %s, want compensated", st.Status)
			}
			// emit-invoice failed (never completed) and its own compensation
			// ran: the API and the page say failed, not compensated.
			inv := st.Steps["emit-invoice"]
			if inv.Status != dag.StatusFailed || inv.CompletedAt != nil || inv.Compensation == nil || inv.Compensation.Status != dag.StatusCompleted {
				t.Errorf("emit-invoice: %+v (compensation %+v); want failed, its compensation completed", inv, inv.Compensation)
			}
			if !strings.Contains(page, `data-step="emit-invoice" data-status="failed"`) {
				t.Errorf("the failed step is not drawn failed")
			}
			if strings.Contains(page, "Retry from failed step") {
				t.Errorf("the page of a compensated run offers a retry, which the API refuses")
			}
		})

		t.Run("compensation failed", func(t *testing.T) {
			id := start(t, orderInput{Key: t.Name(), Fail: "emit-invoice", FailUndo: "charge-card"})
			s.waitStatus(id, "failed")
			st, badges, page := check(t, id)
			if st.Status != dag.StatusCompensationFailed {
				t.Fatalf("run %s, want compensation_failed", st.Status)
			}
			if !strings.HasSuffix(badges["charge-card"], "· failed") {
				t.Errorf("charge-card's badge reads %q, want … · failed", badges["charge-card"])
			}
			if !strings.Contains(page, `<span class="badge s-compensation_failed">compensation_failed</span>`) || !strings.Contains(page, `<span class="badge s-failed">compensation failed</span>`) {
				t.Errorf("the page does not say the compensation failed")
			}
			if strings.Contains(page, `s-compensated">compensated<`) {
				t.Errorf("the page calls the run compensated")
			}
			if strings.Contains(page, "Retry from failed step") {
				t.Errorf("the page offers a retry, which the API refuses")
			}
		})
	})
}
