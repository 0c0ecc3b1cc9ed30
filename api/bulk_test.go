package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
)

// TestBulkActionsOverHTTP: a dry run counts and stores nothing, a bad
// query or operation is a 400 naming the field (the query's fault by line
// and column), a started action is driven by the server's worker to its
// end and listed with what it did, and canceling answers as documented.
func TestBulkActionsOverHTTP(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		wf := "bulk-http-" + strings.ReplaceAll(t.Name(), "/", "-") // no worker runs it
		for range 5 {
			if _, err := s.b.CreateWorkflowRun(s.ctx, backend.CreateWorkflowRunParams{WorkflowName: wf}); err != nil {
				t.Fatal(err)
			}
		}
		query := `workflow = "` + wf + `"`

		var dry api.BulkDryRun
		s.must(http.StatusOK, "POST", "/v1/bulk-actions", map[string]any{"operation": "cancel", "query": query, "dryRun": true}).decode(t, &dry)
		if !dry.DryRun || dry.Matched != 5 || dry.Eligible != 5 {
			t.Fatalf("dry run = %+v, want 5 matched and eligible", dry)
		}
		var list struct{ Data []api.BulkAction }
		s.must(http.StatusOK, "GET", "/v1/bulk-actions", nil).decode(t, &list)
		if len(list.Data) != 0 {
			t.Fatalf("a dry run stored %d actions, want none", len(list.Data))
		}

		for _, bad := range []struct {
			body        map[string]any
			field, want string
		}{
			{map[string]any{"operation": "cancel", "query": `status = "nope"`}, "query", "1:10"},
			{map[string]any{"operation": "cancel", "query": `status = `}, "query", "invalid query at 1:"},
			{map[string]any{"operation": "explode", "query": query}, "operation", "explode"},
			{map[string]any{"operation": "cancel"}, "query", "query is required"},
			{map[string]any{"operation": "cancel", "query": query, "maxPerSecond": -1}, "maxPerSecond", "-1"},
		} {
			e := s.must(http.StatusBadRequest, "POST", "/v1/bulk-actions", bad.body).apiError(t)
			if e.Field != bad.field || !strings.Contains(e.Message, bad.want) {
				t.Errorf("POST %v answered field %q, %q; want field %q naming %q", bad.body, e.Field, e.Message, bad.field, bad.want)
			}
		}
		s.must(http.StatusUnsupportedMediaType, "POST", "/v1/bulk-actions", `{"operation":"cancel","query":""}`, "Content-Type", "text/plain")

		var a api.BulkAction
		s.must(http.StatusCreated, "POST", "/v1/bulk-actions", map[string]any{"operation": "cancel", "query": query, "reason": "cleanup"}).decode(t, &a)
		if a.State != "running" || a.Matched != 5 || a.Reason != "cleanup" || a.RequestedBy != "api" {
			t.Fatalf("started action = %+v, want running, 5 matched, its reason, requested by api", a)
		}
		s.until("the action completes", func() bool {
			s.must(http.StatusOK, "GET", "/v1/bulk-actions/"+a.ID, nil).decode(t, &a)
			return a.State == "completed"
		})
		if a.Acted != 5 || a.Skipped != 0 || a.FinishedAt == nil {
			t.Fatalf("completed action = %+v, want 5 acted", a)
		}
		s.must(http.StatusOK, "GET", "/v1/bulk-actions?limit=10", nil).decode(t, &list)
		if len(list.Data) != 1 || list.Data[0].ID != a.ID || list.Data[0].Acted != 5 {
			t.Fatalf("list = %+v, want the action with what it did", list.Data)
		}
		if e := s.must(http.StatusConflict, "POST", "/v1/bulk-actions/"+a.ID+"/cancel", nil).apiError(t); e.Code != api.CodeBulkActionFinished {
			t.Errorf("cancel of a completed action answered %q, want %q", e.Code, api.CodeBulkActionFinished)
		}
		s.must(http.StatusNotFound, "GET", "/v1/bulk-actions/bulk_missing", nil)
		s.must(http.StatusNotFound, "POST", "/v1/bulk-actions/bulk_missing/cancel", nil)
		s.must(http.StatusBadRequest, "GET", "/v1/bulk-actions?cursor=nope", nil)

		// an action another driver holds: canceling it answers 200 canceling
		store := s.b.(backend.BulkActionStore)
		held, err := store.CreateBulkAction(s.ctx, backend.CreateBulkActionParams{ID: "bulk_held_" + wf, Operation: backend.BulkCancel, Query: query})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
		defer cancel()
		if got, err := store.ClaimBulkAction(ctx, backend.ClaimBulkActionParams{Owner: "elsewhere", Lease: time.Hour}); err != nil || got == nil || got.ID != held.ID {
			t.Fatalf("claim the held action: %+v, %v", got, err)
		}
		var c api.BulkAction
		s.must(http.StatusOK, "POST", "/v1/bulk-actions/"+held.ID+"/cancel", nil).decode(t, &c)
		if c.State != "canceling" || c.Driver == nil || *c.Driver != "elsewhere" {
			t.Fatalf("canceled held action = %+v, want canceling, driven by elsewhere", c)
		}
		s.must(http.StatusOK, "POST", "/v1/bulk-actions/"+held.ID+"/cancel", "{}")
	})
}
