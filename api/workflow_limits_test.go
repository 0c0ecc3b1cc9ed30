package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
)

// TestListLimits: GET /v1/limits answers the stored limits, who declared
// them and the different limits the last declaration replaced (issue 19,
// item 11), in the documented shape (null: no limit of that kind).
func TestListLimits(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		var empty api.List[api.WorkflowLimits]
		s.must(http.StatusOK, "GET", "/v1/limits", nil).decode(t, &empty)
		if len(empty.Data) != 0 || empty.HasMore {
			t.Fatalf("limits of a namespace without any: %+v", empty)
		}
		d := s.b.(backend.LimitDeclarer)
		if _, _, err := d.DeclareWorkflowLimits(s.ctx, "limited", backend.Limits{Concurrency: 2}, "worker a (limited v1)"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := d.DeclareWorkflowLimits(s.ctx, "limited", backend.Limits{ConcurrencyPerKey: 1, RateLimit: 3, RatePeriod: time.Second}, "worker b (limited v2)"); err != nil {
			t.Fatal(err)
		}
		var got api.List[api.WorkflowLimits]
		s.must(http.StatusOK, "GET", "/v1/limits", nil).decode(t, &got)
		if len(got.Data) != 1 {
			t.Fatalf("GET /v1/limits = %+v, want one workflow", got)
		}
		l := got.Data[0]
		if l.WorkflowName != "limited" || l.Concurrency != nil || l.ConcurrencyPerKey == nil || *l.ConcurrencyPerKey != 1 ||
			l.RateLimit == nil || *l.RateLimit != 3 || l.RatePeriodMs == nil || *l.RatePeriodMs != 1000 ||
			l.DeclaredBy == nil || *l.DeclaredBy != "worker b (limited v2)" {
			t.Errorf("limits %+v", l)
		}
		if r := l.Replaced; r == nil || r.Concurrency == nil || *r.Concurrency != 2 || r.ConcurrencyPerKey != nil ||
			r.DeclaredBy == nil || *r.DeclaredBy != "worker a (limited v1)" || r.At.IsZero() {
			t.Errorf("replaced %+v, want concurrency 2 declared by worker a", r)
		}
		s.must(http.StatusBadRequest, "GET", "/v1/limits?limit=3", nil)
	})
}
