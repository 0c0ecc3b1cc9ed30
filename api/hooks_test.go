package api_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/api"
)

// TestHooks: payloads sent before the workflow waits are kept and
// delivered in order, each once; a taken token conflicts; a run's hooks
// are disposed when it ends, and the token can be taken again.
func TestHooks(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		tok := "order-42-approval"
		run := s.start("approval", map[string]any{"Token": tok, "N": 3})
		// Wait until the hook exists, then send three payloads at once:
		// the workflow has not received any yet.
		s.until("the hook", func() bool { return s.hookExists(tok) })
		var hook api.Hook
		s.must(http.StatusOK, "GET", "/v1/hooks/"+tok, nil).decode(t, &hook)
		if hook.RunID != run.ID || hook.Token != tok || !hook.Live || string(hook.Metadata) != `{"for":"test"}` {
			t.Fatalf("hook %+v", hook)
		}
		for i, p := range []string{`{"n":1}`, `"two"`, `[3]`} {
			var d api.HookDelivery
			s.must(http.StatusOK, "POST", "/v1/hooks/"+tok, p).decode(t, &d)
			if d.RunID != run.ID || d.HookID != hook.ID || d.Seq != int64(i+1) {
				t.Errorf("delivery %d: %+v", i, d)
			}
		}
		done := s.waitStatus(run.ID, "completed")
		if string(done.Output) != `[{"n":1},"two",[3]]` {
			t.Errorf("the workflow received %s", done.Output)
		}
		// Disposed with the run.
		e := s.must(http.StatusNotFound, "POST", "/v1/hooks/"+tok, `4`).apiError(t)
		if e.Code != api.CodeHookNotFound {
			t.Errorf("resume after the run ended: %+v", e)
		}
		var hooks api.List[api.Hook]
		s.must(http.StatusOK, "GET", "/v1/runs/"+run.ID+"/hooks", nil).decode(t, &hooks)
		if len(hooks.Data) != 1 || hooks.Data[0].Live || hooks.Data[0].Payloads != 3 {
			t.Errorf("the run's hooks after it ended: %+v", hooks.Data)
		}
		var blank api.List[api.Hook]
		s.must(http.StatusOK, "GET", "/v1/runs/"+run.ID+"/hooks?resolveData=none", nil).decode(t, &blank)
		if len(blank.Data) != 1 || blank.Data[0].Metadata != nil {
			t.Errorf("resolveData=none kept the metadata")
		}

		// The token is free again: a second run takes it, and while it
		// lives a third run cannot.
		second := s.start("approval", map[string]any{"Token": tok, "N": 1})
		s.until("the hook", func() bool { return s.hookExists(tok) })
		third := s.start("approval", map[string]any{"Token": tok, "N": 1})
		failed := s.waitStatus(third.ID, "failed")
		if !strings.Contains(string(failed.Error), "held by another live hook") {
			t.Errorf("the run that took a held token failed with %s", failed.Error)
		}
		var d api.HookDelivery
		s.must(http.StatusOK, "POST", "/v1/hooks/"+tok, `"go"`).decode(t, &d)
		if d.RunID != second.ID {
			t.Errorf("the payload went to run %s, want %s", d.RunID, second.ID)
		}
		if out := s.waitStatus(second.ID, "completed").Output; string(out) != `["go"]` {
			t.Errorf("second run received %s", out)
		}
	})
}

// TestWebhook: any request to /v1/webhooks/{token} is delivered to the
// hook — method, headers (not the credentials) and body — and answers 202
// with an empty body.
func TestWebhook(t *testing.T) {
	eachBackend(t, api.Options{Token: testToken}, func(t *testing.T, s *server) {
		tok := "wh-" + strings.Repeat("x", 20)
		run := s.start("approval", map[string]any{"Token": tok, "N": 2})
		s.until("the hook", func() bool { return s.hookExists(tok) })
		r := s.must(http.StatusAccepted, "POST", "/v1/webhooks/"+tok+"?event=paid", `{"amount": 12}`, "Content-Type", "application/json", "X-Signature", "abc", "Cookie", "session=1")
		if len(r.body) != 0 {
			t.Errorf("a webhook answered a body: %q", r.body)
		}
		s.must(http.StatusAccepted, "PUT", "/v1/webhooks/"+tok, []byte{0xff, 0x00, 0x01}, "Content-Type", "application/octet-stream")
		done := s.waitStatus(run.ID, "completed")
		var got []api.WebhookRequest
		if err := json.Unmarshal(done.Output, &got); err != nil || len(got) != 2 {
			t.Fatalf("received %s (%v)", done.Output, err)
		}
		first := got[0]
		if first.Method != "POST" || first.URL != "/v1/webhooks/"+tok+"?event=paid" || first.Body == nil || *first.Body != `{"amount": 12}` {
			t.Errorf("first delivery %+v", first)
		}
		if first.Headers["X-Signature"][0] != "abc" {
			t.Errorf("headers %v", first.Headers)
		}
		if _, ok := first.Headers["Authorization"]; ok {
			t.Errorf("the bearer token was delivered to the workflow")
		}
		if _, ok := first.Headers["Cookie"]; ok {
			t.Errorf("the cookie was delivered to the workflow")
		}
		second := got[1]
		if second.Method != "PUT" || second.Body != nil || base64.StdEncoding.EncodeToString(second.BodyBase64) != base64.StdEncoding.EncodeToString([]byte{0xff, 0x00, 0x01}) {
			t.Errorf("binary delivery %+v", second)
		}
	})
}

// TestSignals: a signal reaches the runs waiting for it; its idempotency
// key makes a repeat answer the first send's runs.
func TestSignals(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		var res api.SignalResult
		s.must(http.StatusOK, "POST", "/v1/signals", map[string]any{"signal": "nobody-waits"}).decode(t, &res)
		if res.RunIDs == nil || len(res.RunIDs) != 0 {
			t.Errorf("a signal nobody waits for reached %v", res.RunIDs)
		}
		run := s.start("streamer", map[string]any{"Key": "sig", "Chunks": [][]byte{[]byte("a"), []byte("b")}})
		// Until the run waits: a keyed send that reached nobody is not
		// remembered, so it can be sent again.
		s.until("the run to receive the signal", func() bool {
			s.must(http.StatusOK, "POST", "/v1/signals", map[string]any{"signal": "more-sig", "data": "go", "idempotencyKey": "once"}).decode(t, &res)
			if len(res.RunIDs) == 0 {
				var r api.Run
				s.must(http.StatusOK, "GET", "/v1/runs/"+run.ID, nil).decode(t, &r)
				if r.Status != "pending" && r.Status != "running" {
					t.Fatalf("run %s is %s: %s", run.ID, r.Status, r.Error)
				}
			}
			return len(res.RunIDs) == 1
		})
		if res.RunIDs[0] != run.ID {
			t.Errorf("signal reached %v, want %s", res.RunIDs, run.ID)
		}
		var again api.SignalResult
		s.must(http.StatusOK, "POST", "/v1/signals", map[string]any{"signal": "more-sig", "data": "go", "idempotencyKey": "once"}).decode(t, &again)
		if len(again.RunIDs) != 1 || again.RunIDs[0] != run.ID {
			t.Errorf("the repeated send answered %v", again.RunIDs)
		}
		s.waitStatus(run.ID, "completed")
	})
}

// TestSignalRun: a signal sent to one run is stored until the run waits
// for it (202), a keyed repeat answers the first send (200, duplicate,
// even once the signal let the run finish), a completed run refuses a new
// send (409) and a missing one is 404.
func TestSignalRun(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		run := s.start("streamer", map[string]any{"Key": "sig", "Chunks": [][]byte{[]byte("a")}})
		// A name holding "/" is sent percent-encoded, and kept (sent first:
		// more-sig below lets the run finish, after which sends are 409).
		var slashed api.RunSignal
		s.must(http.StatusAccepted, "POST", "/v1/runs/"+run.ID+"/signals/order%2Ford-1%2Fdelivered", nil).decode(t, &slashed)
		if slashed.ID == "" || slashed.Delivered {
			t.Errorf("send of order/ord-1/delivered answered %+v; want kept", slashed)
		}
		var first, again api.RunSignal
		s.must(http.StatusAccepted, "POST", "/v1/runs/"+run.ID+"/signals/more-sig", map[string]any{"data": "go", "idempotencyKey": "once"}).decode(t, &first)
		if first.ID == "" || first.Duplicate {
			t.Errorf("first send answered %+v", first)
		}
		s.must(http.StatusOK, "POST", "/v1/runs/"+run.ID+"/signals/more-sig", map[string]any{"data": "go", "idempotencyKey": "once"}).decode(t, &again)
		if !again.Duplicate || again.ID != first.ID {
			t.Errorf("the repeated send answered %+v, want a duplicate of %s", again, first.ID)
		}
		s.waitStatus(run.ID, "completed")
		s.must(http.StatusConflict, "POST", "/v1/runs/"+run.ID+"/signals/more-sig", nil)
		s.must(http.StatusNotFound, "POST", "/v1/runs/no-such-run/signals/more-sig", map[string]any{"data": 1})
	})
}

// TestHookPayloadSchema: a payload the hook's schema refuses (its
// metadata's payloadSchema) answers 400 invalid_argument, field payload,
// naming what is wrong; nothing is stored and the run keeps waiting for
// the payload that fits.
func TestHookPayloadSchema(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		tok := "approve-with-schema"
		schema := json.RawMessage(`{"type":"object","required":["approved"],"properties":{"approved":{"type":"boolean"}}}`)
		run := s.start("approval", map[string]any{"Token": tok, "N": 1, "Schema": schema})
		s.until("the hook", func() bool { return s.hookExists(tok) })
		for body, want := range map[string]string{`{}`: "approved", `"x"`: "got string, want object", `{"approved":"yes"}`: "approved: got string, want boolean"} {
			e := s.must(http.StatusBadRequest, "POST", "/v1/hooks/"+tok, body).apiError(t)
			if e.Code != api.CodeInvalidArgument || e.Field != "payload" || !strings.Contains(e.Message, want) {
				t.Errorf("POST %s: %+v; want invalid_argument on payload saying %q", body, e, want)
			}
		}
		var hook api.Hook
		s.must(http.StatusOK, "GET", "/v1/hooks/"+tok, nil).decode(t, &hook)
		if hook.Payloads != 0 {
			t.Fatalf("refused payloads were stored: the hook has %d", hook.Payloads)
		}
		s.must(http.StatusOK, "POST", "/v1/hooks/"+tok, `{"approved":true}`)
		if out := s.waitStatus(run.ID, "completed").Output; string(out) != `[{"approved":true}]` {
			t.Errorf("the workflow received %s", out)
		}
	})
}
