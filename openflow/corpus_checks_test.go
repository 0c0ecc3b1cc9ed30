package openflow_test

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/openworkflow-go/openworkflow/openflow"
)

// shapeChecks are the partial checks of MANIFEST.json's result_shape
// texts, as the Windmill tests assert them, keyed by "<file>#<case>" (and
// "#<scenario>"). A case with a result_shape and no check here fails.
var shapeChecks = map[string]func(v any) error{
	// array; [0] and [1] are null, [2] is {error:{name:'StopIteration',
	// message contains '2'}}; loop stops at the first failure
	"forloop_stops_on_failure#1": func(v any) error {
		a, err := array(v, 3)
		if err != nil {
			return err
		}
		if a[0] != nil || a[1] != nil {
			return fmt.Errorf("[0] and [1] are %v and %v, want null", a[0], a[1])
		}
		return errorLike(a[2], "StopIteration", "2")
	},
	// [ {error:{name:'Error', message:'failure', ...}}, [1,3] ]
	"branchall_skip_failure_false#0": func(v any) error {
		return branchPair(v, "[1,3]")
	},
	// [ {error:{name:'Error', message:'failure', ...}}, [1,2] ]
	"branchall_skip_failure_true#0": func(v any) error {
		return branchPair(v, "[1,2]")
	},
	// {'from failure module': {error:{name:'Error', message contains '[]',
	// stack, step_id:'a'}}}
	"failure_module_deno#0": func(v any) error {
		e, err := fromFailureModule(v, "Error", "[]")
		if err != nil {
			return err
		}
		if e["step_id"] != "a" {
			return fmt.Errorf("step_id = %v, want a", e["step_id"])
		}
		if s, _ := e["stack"].(string); s == "" {
			return fmt.Errorf("no stack")
		}
		return nil
	},
	"failure_module_deno#1": func(v any) error { _, err := fromFailureModule(v, "", "[0]"); return err },
	"failure_module_deno#2": func(v any) error { _, err := fromFailureModule(v, "", "[0,1]"); return err },
	// array from the last loop attempt: [99, {error:{message:'read'}}]
	"retry_forloop_socket_harness#0#test_fail_step_zero": func(v any) error {
		a, err := array(v, 2)
		if err != nil {
			return err
		}
		if a[0] != float64(99) {
			return fmt.Errorf("[0] = %v, want 99", a[0])
		}
		return errorLike(a[1], "", "read")
	},
	// {error:{message contains 'index out of range'}}
	"retry_forloop_socket_harness#0#test_fail_step_one": func(v any) error {
		return errorLike(v, "", "index out of range")
	},
	// {recv: 42, 'from failure module': {error:{name:'IndexError', ...}}}
	"retry_then_failure_module_socket_harness#0": func(v any) error {
		m, ok := v.(map[string]any)
		if !ok || m["recv"] != float64(42) {
			return fmt.Errorf("recv is not 42")
		}
		_, err := fromFailureModule(v, "IndexError", "")
		return err
	},
	// {error:{name:'EarlyStopError', message:'API returned userErrors',
	// result:{userErrors:['email taken'], ok:false}}}
	"stop_after_if_error_message#0": func(v any) error {
		if err := exactJSON(v, `{"error":{"name":"EarlyStopError","message":"API returned userErrors","result":{"userErrors":["email taken"],"ok":false}}}`); err != nil {
			return err
		}
		return nil
	},
	// {error:{name:'EarlyStopError', message:'API returned userErrors'}}
	// with no `result` key
	"stop_after_if_error_message#1": func(v any) error {
		return exactJSON(v, `{"error":{"name":"EarlyStopError","message":"API returned userErrors"}}`)
	},
	// {error:{name:'Error', message:'nope', ...}}
	"retry_if_flow_env#0": func(v any) error { return errorLike(v, "Error", "nope") },
	// {error:{name:'TypeError', ...}}: main() receives undefined
	"yaml_sample_missing_input_transform#0": func(v any) error { return errorLike(v, "TypeError", "") },
}

func array(v any, n int) ([]any, error) {
	a, ok := v.([]any)
	if !ok || len(a) != n {
		return nil, fmt.Errorf("want an array of %d items", n)
	}
	return a, nil
}

// errorLike checks {error: {name: name, message containing msg}} (an
// empty name or msg is not checked).
func errorLike(v any, name, msg string) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%v is not an object", v)
	}
	e, ok := m["error"].(map[string]any)
	if !ok {
		return fmt.Errorf("no error object in %v", v)
	}
	if name != "" && e["name"] != name {
		return fmt.Errorf("error name %v, want %s", e["name"], name)
	}
	if s, _ := e["message"].(string); !strings.Contains(s, msg) {
		return fmt.Errorf("error message %q does not contain %q", s, msg)
	}
	return nil
}

func branchPair(v any, second string) error {
	a, err := array(v, 2)
	if err != nil {
		return err
	}
	if err := errorLike(a[0], "Error", "failure"); err != nil {
		return err
	}
	return exactJSON(a[1], second)
}

func fromFailureModule(v any, name, msg string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not an object")
	}
	inner := m["from failure module"]
	if err := errorLike(inner, name, msg); err != nil {
		return nil, err
	}
	return inner.(map[string]any)["error"].(map[string]any), nil
}

func exactJSON(v any, want string) error {
	got, _ := json.Marshal(v)
	if !jsonEqual(got, []byte(want)) {
		return fmt.Errorf("got %s, want %s", got, want)
	}
	return nil
}

// byteServer is the retry tests' TCP server (Windmill's retry.rs): for
// each connection it reads one byte (the step's index, 0xff for the last
// step), then replies with the next scripted byte, or closes without
// replying for a nil reply (which makes the step fail).
type byteServer struct {
	ln   net.Listener
	mu   sync.Mutex
	got  []int
	done chan struct{}
}

func startByteServer(t testing.TB, replies []*int) *byteServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &byteServer{ln: ln, done: make(chan struct{})}
	go s.serve(replies)
	t.Cleanup(func() {
		_ = ln.Close()
		<-s.done
	})
	return s
}

func (s *byteServer) serve(replies []*int) {
	defer close(s.done)
	for i := 0; ; i++ {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		buf := make([]byte, 1)
		if _, err := c.Read(buf); err == nil {
			s.mu.Lock()
			s.got = append(s.got, int(buf[0]))
			s.mu.Unlock()
			if i < len(replies) && replies[i] != nil {
				_, _ = c.Write([]byte{byte(*replies[i])})
			}
		}
		_ = c.Close()
	}
}

func (s *byteServer) port() int { return s.ln.Addr().(*net.TCPAddr).Port }

func (s *byteServer) received() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.got...)
}

// resumeAfter waits until the module ev.AfterStep of the run is suspended,
// then sends the event (the harness of the adapted suspend flow: in
// Windmill the step resumed itself over HTTP).
func resumeAfter(t *testing.T, env *flowEnv, runID string, ev resumeStep) {
	t.Helper()
	waitFor(env.ctx, t, "module "+ev.AfterStep+" to be suspended", func() bool {
		mods, err := openflow.Suspended(env.ctx, env.client, runID)
		if err != nil {
			t.Fatalf("suspended: %v", err)
		}
		return len(mods) == 1 && mods[0].Module == ev.AfterStep
	})
	e := openflow.ResumeEvent{Payload: ev.Payload, Disapprove: !ev.Approve}
	if ev.Approver != nil {
		e.Approver = *ev.Approver
	}
	mod, err := openflow.Resume(env.ctx, env.client, runID, e)
	if err != nil {
		t.Fatalf("resume after %s: %v", ev.AfterStep, err)
	}
	if mod != ev.AfterStep {
		t.Fatalf("resumed module %q, want %q", mod, ev.AfterStep)
	}
}
