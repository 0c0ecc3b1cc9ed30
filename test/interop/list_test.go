package interop

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

type tsPage struct {
	Data       []tsRun `json:"data"`
	Pagination struct {
		Next *string `json:"next"`
		Prev *string `json:"prev"`
	} `json:"pagination"`
}

// The TypeScript backend's listWorkflowRuns and countWorkflowRuns and the
// TypeScript client's cancelWorkflowRun see and act on Go-created runs, and
// list cursors are exchangeable between the SDKs.
func TestTSClientListsCountsAndCancelsGoRuns(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	ctx := context.Background()

	var ids []string
	for i := range 3 {
		h, err := e.client.StartByName(ctx, "go-listed", "", map[string]int{"i": i})
		must(t, err)
		ids = append(ids, h.ID)
		time.Sleep(3 * time.Millisecond) // distinct created_at, so the order is by time
	}
	var tsCreated tsRun
	ts.call("start", map[string]any{"name": "ts-listed", "input": nil}, &tsCreated)
	ids = append(ids, tsCreated.ID)

	var page tsPage
	ts.call("list", map[string]any{}, &page)
	var got []string
	for _, r := range page.Data {
		got = append(got, r.ID)
	}
	want := []string{ids[3], ids[2], ids[1], ids[0]}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("TS list = %v, want newest first %v", got, want)
	}
	goPage, err := e.client.ListRuns(ctx, backend.ListWorkflowRunsParams{})
	must(t, err)
	var goGot []string
	for _, r := range goPage.Data {
		goGot = append(goGot, r.ID)
	}
	if !reflect.DeepEqual(goGot, want) {
		t.Errorf("Go list = %v, want %v", goGot, want)
	}

	t.Run("cursors cross SDKs", func(t *testing.T) {
		var first tsPage
		ts.call("list", map[string]any{"limit": 2}, &first)
		if first.Pagination.Next == nil {
			t.Fatal("TS first page has no next cursor")
		}
		rest, err := e.client.ListRuns(ctx, backend.ListWorkflowRunsParams{Limit: 2, After: *first.Pagination.Next})
		must(t, err)
		if len(rest.Data) != 2 || rest.Data[0].ID != ids[1] || rest.Data[1].ID != ids[0] {
			t.Errorf("Go page after the TS cursor: %+v", rest.Data)
		}
		goFirst, err := e.client.ListRuns(ctx, backend.ListWorkflowRunsParams{Limit: 1})
		must(t, err)
		var tsRest tsPage
		ts.call("list", map[string]any{"limit": 1, "after": *goFirst.Next}, &tsRest)
		if len(tsRest.Data) != 1 || tsRest.Data[0].ID != ids[2] {
			t.Errorf("TS page after the Go cursor: %+v", tsRest.Data)
		}
		var filtered tsPage
		ts.call("list", map[string]any{"workflowName": "go-listed", "status": "pending"}, &filtered)
		if len(filtered.Data) != 3 {
			t.Errorf("TS list filtered by name and status has %d runs, want 3", len(filtered.Data))
		}
	})

	t.Run("cancel and count", func(t *testing.T) {
		var c struct {
			Canceled bool   `json:"canceled"`
			Error    string `json:"error"`
		}
		ts.call("cancel", map[string]any{"id": ids[0]}, &c)
		if !c.Canceled {
			t.Errorf("TS cancel of Go run %s: %s", ids[0], c.Error)
		}
		if r := e.run(ids[0]); r.Status != backend.RunCanceled || r.FinishedAt == nil {
			t.Errorf("Go reads the TS-canceled run as %s", r.Status)
		}
		if _, err := e.client.CancelRun(ctx, tsCreated.ID); err != nil {
			t.Errorf("Go cancel of TS run: %v", err)
		}
		var counts backend.RunCounts
		ts.call("count", nil, &counts)
		if counts != (backend.RunCounts{Pending: 2, Canceled: 2}) {
			t.Errorf("TS counts %+v, want 2 pending and 2 canceled", counts)
		}
		goCounts, err := e.client.CountRuns(ctx)
		must(t, err)
		if goCounts != counts {
			t.Errorf("Go counts %+v differ from TS counts %+v", goCounts, counts)
		}
	})
}

// The TypeScript client cancels a Go run parked by the Go worker; the Go
// handle reports the cancellation, and canceling a completed Go run fails
// with OpenWorkflow's message.
func TestTSClientCancelsParkedGoRun(t *testing.T) {
	setup(t)
	e := newEnv(t)
	ts := e.ts()
	sleeper := ow.Define(ow.Spec{Name: "go-sleeper"}, func(ctx ow.Context, _ struct{}) (string, error) {
		if err := ow.Sleep(ctx, "long", time.Hour); err != nil {
			return "", err
		}
		return "woke", nil
	})
	e.goWorker(sleeper, goEcho(ow.Spec{Name: "go-echo"}))
	h, err := sleeper.Start(context.Background(), e.client, struct{}{})
	must(t, err)
	e.waitParked(h.ID, backend.StepSleep, 10*time.Second)
	assertWaitContext(t, e.steps(h.ID)[0].Context, "sleep", false)

	var c struct {
		Canceled bool   `json:"canceled"`
		Error    string `json:"error"`
	}
	ts.call("cancel", map[string]any{"id": h.ID}, &c)
	if !c.Canceled {
		t.Fatalf("TS cancel: %s", c.Error)
	}
	ctx := contextWithTimeout(t, 10*time.Second)
	if _, err := h.Result(ctx); !errors.Is(err, ow.ErrRunCanceled) {
		t.Errorf("Go Result after TS cancel = %v, want ErrRunCanceled", err)
	}

	done, err := goEcho(ow.Spec{Name: "go-echo"}).Start(context.Background(), e.client, echoIn{})
	must(t, err)
	result(t, done, 10*time.Second)
	ts.call("cancel", map[string]any{"id": done.ID}, &c)
	if want := "Cannot cancel workflow run " + done.ID + " with status completed"; !strings.Contains(c.Error, want) {
		t.Errorf("TS cancel of a completed Go run: %q, want %q", c.Error, want)
	}
}
