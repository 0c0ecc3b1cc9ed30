package openworkflow_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// TestHookPayloadSchemaRefusesAtResume: a hook created with a payload
// schema records it in its metadata beside the workflow's own members;
// Client.ResumeHook refuses a payload the schema does not accept with a
// *HookPayloadError naming each problem, and stores nothing, so the run
// keeps waiting and the good payload that follows is the one it receives.
func TestHookPayloadSchemaRefusesAtResume(t *testing.T) {
	type order struct {
		ID    string `json:"id"`
		Count int    `json:"count"`
	}
	schema := json.RawMessage(`{"type":"object","required":["id","count"],"properties":{"id":{"type":"string"},"count":{"type":"integer","minimum":1}}}`)
	wf := ow.Define(ow.Spec{Name: "orders"}, func(ctx ow.Context, _ struct{}) (order, error) {
		h, err := ow.CreateHook[order](ctx, "order", ow.WithToken("tok-order"), ow.WithMetadata(map[string]string{"for": "shop"}), ow.WithPayloadSchema(schema))
		if err != nil {
			return order{}, err
		}
		o, ok, err := h.Receive(ow.WithTimeout(time.Hour))
		if err == nil && !ok {
			err = errors.New("timed out")
		}
		return o, err
	})
	e := newEnv(t)
	e.register(wf)
	id := start(e, wf, struct{}{})
	e.drain()

	hooks, err := e.client.ListHooks(e.ctx, id)
	if err != nil || len(hooks) != 1 {
		t.Fatalf("ListHooks = %v, %v; want the run's hook", hooks, err)
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(hooks[0].Metadata, &meta); err != nil || string(meta["for"]) != `"shop"` || meta[ow.HookPayloadSchemaKey] == nil {
		t.Fatalf("metadata %s: want the workflow's members and %q", hooks[0].Metadata, ow.HookPayloadSchemaKey)
	}

	for _, c := range []struct {
		payload any
		want    []string
	}{
		{"x", []string{"the payload: got string, want object"}},
		{map[string]any{"id": "a"}, []string{"count"}},
		{map[string]any{"id": 7, "count": 0}, []string{"id: got number, want string", "count: minimum"}},
	} {
		_, _, err := e.client.ResumeHook(e.ctx, "tok-order", c.payload)
		var pe *ow.HookPayloadError
		if !errors.As(err, &pe) || !errors.Is(err, backend.ErrInvalidArgument) || pe.StepName != "order" {
			t.Fatalf("ResumeHook(%v) = %v; want a *HookPayloadError of hook order wrapping ErrInvalidArgument", c.payload, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ResumeHook(%v): error %q does not say %q", c.payload, err, w)
			}
		}
	}
	h, err := e.client.GetHook(e.ctx, "tok-order")
	if err != nil || h.Payloads != 0 {
		t.Fatalf("after refused payloads: hook %+v, %v; want 0 payloads stored", h, err)
	}
	if _, _, err := e.client.ResumeHook(e.ctx, "tok-order", order{ID: "a", Count: 2}); err != nil {
		t.Fatalf("a valid payload: %v", err)
	}
	e.drain()
	if got := output[order](e, id); got != (order{ID: "a", Count: 2}) {
		t.Errorf("output %+v, want the valid payload", got)
	}
}

// TestHookPayloadSchemaMustCompile: a payload schema that is not a JSON
// Schema, or one given with metadata that is not an object, fails the
// hook's step without retry, naming the problem.
func TestHookPayloadSchemaMustCompile(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []ow.HookOption
		want string
	}{
		{"a bad schema", []ow.HookOption{ow.WithPayloadSchema(json.RawMessage(`{"type":"nonsense"}`))}, "payload schema"},
		{"a schema with metadata that is not an object", []ow.HookOption{ow.WithMetadata("note"), ow.WithPayloadSchema(json.RawMessage(`{}`))}, "must be a JSON object"},
		{"metadata naming a bad schema", []ow.HookOption{ow.WithMetadata(map[string]any{"payloadSchema": 5})}, "payload schema"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wf := ow.Define(ow.Spec{Name: "bad-schema"}, func(ctx ow.Context, _ struct{}) (int, error) {
				_, err := ow.CreateHook[int](ctx, "h", c.opts...)
				return 0, err
			})
			e := newEnv(t)
			e.register(wf)
			id := start(e, wf, struct{}{})
			e.drain()
			r := e.requireStatus(id, backend.RunFailed)
			if !strings.Contains(string(r.Error), c.want) {
				t.Errorf("error %s; want it to say %q", r.Error, c.want)
			}
		})
	}
}
