package backendtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// hookStore returns b's hooks, skipping the test when b has none.
func hookStore(t testing.TB, b backend.Backend) backend.HookStore {
	t.Helper()
	hs, ok := b.(backend.HookStore)
	if !ok {
		t.Skip("the backend does not implement backend.HookStore")
	}
	return hs
}

// hookParams are the params of a hook of run at step, with a fresh id
// and attempt id.
func hookParams(run *backend.WorkflowRun, worker, step, token string) backend.CreateHookParams {
	return backend.CreateHookParams{
		WorkflowRunID: run.ID, WorkerID: worker, ID: "hook_" + randomHex(8),
		StepName: step, StepAttemptID: "step_" + randomHex(8), Token: token,
	}
}

// createHook creates a hook of run (owned by worker) at step with token.
func createHook(t testing.TB, b backend.Backend, run *backend.WorkflowRun, worker, step, token string) *backend.Hook {
	t.Helper()
	h, err := hookStore(t, b).CreateHook(t.Context(), hookParams(run, worker, step, token))
	if err != nil {
		t.Fatalf("CreateHook(run %s, step %s): %v", run.ID, step, err)
	}
	return h
}

// resumeHook delivers data ("" for nil) to the hook holding token.
func resumeHook(t testing.TB, b backend.Backend, token, data string) *backend.HookPayload {
	t.Helper()
	h, p, err := hookStore(t, b).ResumeHook(t.Context(), token, rawOrNil(data))
	if err != nil {
		t.Fatalf("ResumeHook: %v", err)
	}
	if h == nil || p == nil || p.HookID != h.ID || h.Payloads != p.Seq {
		t.Fatalf("ResumeHook = %+v, %+v; want the hook and its payload, the hook counting it", h, p)
	}
	return p
}

// requirePayloads reads the payloads of hook id one by one with
// NextHookPayload and compares them with want (JSON values), in order.
func requirePayloads(t testing.TB, b backend.Backend, hookID string, want ...string) {
	t.Helper()
	hs := hookStore(t, b)
	var after int64
	for i, w := range want {
		p, ok, err := hs.NextHookPayload(t.Context(), hookID, after)
		if err != nil || !ok {
			t.Fatalf("NextHookPayload(%s, %d) = %v, %v; want payload %d", hookID, after, ok, err, i+1)
		}
		if p.HookID != hookID || p.Seq != after+1 {
			t.Fatalf("NextHookPayload(%s, %d) = hook %s seq %d; want hook %s seq %d", hookID, after, p.HookID, p.Seq, hookID, after+1)
		}
		requireJSON(t, fmt.Sprintf("payload %d", p.Seq), p.Data, json.RawMessage(w))
		after = p.Seq
	}
	if p, ok, err := hs.NextHookPayload(t.Context(), hookID, after); err != nil || ok {
		t.Fatalf("NextHookPayload(%s, %d) = %+v, %v, %v; want no further payload", hookID, after, p, ok, err)
	}
}

// requireHook compares every field of two hooks.
func requireHook(t testing.TB, what string, got, want *backend.Hook) {
	t.Helper()
	if got == nil || want == nil {
		t.Fatalf("%s: got hook %v, want %v", what, got, want)
	}
	var d differ
	d.str("namespace_id", got.NamespaceID, want.NamespaceID)
	d.str("id", got.ID, want.ID)
	d.str("token", got.Token, want.Token)
	d.str("workflow_run_id", got.WorkflowRunID, want.WorkflowRunID)
	d.str("step_name", got.StepName, want.StepName)
	d.str("step_attempt_id", got.StepAttemptID, want.StepAttemptID)
	d.json("metadata", got.Metadata, want.Metadata)
	d.str("live", fmt.Sprint(got.Live), fmt.Sprint(want.Live))
	d.str("payloads", fmt.Sprint(got.Payloads), fmt.Sprint(want.Payloads))
	d.time("created_at", &got.CreatedAt, &want.CreatedAt)
	d.fail(t, what)
}

// listHooks returns ListHooks(runID).
func listHooks(t testing.TB, b backend.Backend, runID string) []backend.Hook {
	t.Helper()
	hs, err := hookStore(t, b).ListHooks(t.Context(), runID)
	if err != nil {
		t.Fatalf("ListHooks(%s): %v", runID, err)
	}
	if hs == nil {
		t.Fatalf("ListHooks(%s) = nil, want a non-nil slice", runID)
	}
	return hs
}

// hookWaitContext is the context of a hook-wait attempt on hookID after
// payload afterSeq, as the SDK writes it.
func hookWaitContext(hookID string, afterSeq int64) string {
	return fmt.Sprintf(`{"kind":"hook-wait","hookId":%q,"afterSeq":%d,"timeoutAt":%q}`,
		hookID, afterSeq, backend.FormatTime(time.Now().Add(24*time.Hour)))
}

func testHooks(t *testing.T, s *suite) {
	t.Run("creates a live hook that GetHookByToken returns with its metadata", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		hs := hookStore(t, b)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		p := hookParams(run, w, "approval", "order-42")
		p.Metadata = json.RawMessage(`{"who":"ops","note":"nul \u0000 kept"}`)
		start := time.Now()
		h, err := hs.CreateHook(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		want := &backend.Hook{NamespaceID: b.NamespaceID(), ID: p.ID, Token: p.Token, WorkflowRunID: run.ID,
			StepName: p.StepName, StepAttemptID: p.StepAttemptID, Metadata: p.Metadata, Live: true}
		want.CreatedAt = *requireTimeIn(t, "created_at", &h.CreatedAt, since(start))
		requireHook(t, "created hook", h, want)
		got, err := hs.GetHookByToken(t.Context(), "order-42")
		if err != nil {
			t.Fatal(err)
		}
		requireHook(t, "hook by token", got, want)
		if string(got.Metadata) != string(p.Metadata) {
			t.Fatalf("metadata = %s, want %s byte for byte", got.Metadata, p.Metadata)
		}
	})

	t.Run("re-creating at the same step returns the first hook as it is", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		first := createHook(t, b, run, w, "approval", "first-token")
		again := createHook(t, b, run, w, "approval", "a-token-of-the-replay")
		requireHook(t, "hook created again at the same step", again, first)
		if hs := listHooks(t, b, run.ID); len(hs) != 1 {
			t.Fatalf("the run has %d hooks, want 1", len(hs))
		}
		if _, err := hookStore(t, b).GetHookByToken(t.Context(), "a-token-of-the-replay"); !errors.Is(err, backend.ErrHookNotFound) {
			t.Fatalf("GetHookByToken(the replay's token) = %v, want ErrHookNotFound", err)
		}
	})

	t.Run("refuses a token a live hook holds, with ErrHookConflict, storing nothing", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w1, w2 := newWorkerID(), newWorkerID()
		r1 := startRun(t, b, w1, backend.CreateWorkflowRunParams{})
		r2 := startRun(t, b, w2, backend.CreateWorkflowRunParams{})
		holder := createHook(t, b, r1, w1, "approval", "shared")
		_, err := hookStore(t, b).CreateHook(t.Context(), hookParams(r2, w2, "approval", "shared"))
		requireErrorIs(t, "CreateHook of another run's token", err, backend.ErrHookConflict)
		_, err = hookStore(t, b).CreateHook(t.Context(), hookParams(r1, w1, "second", "shared"))
		requireErrorIs(t, "CreateHook of the token by another step of the same run", err, backend.ErrHookConflict)
		if hs := listHooks(t, b, r2.ID); len(hs) != 0 {
			t.Fatalf("the refused run has hooks %+v", hs)
		}
		if hs := listHooks(t, b, r1.ID); len(hs) != 1 {
			t.Fatalf("the holder's run has %d hooks, want 1", len(hs))
		}
		got, err := hookStore(t, b).GetHookByToken(t.Context(), "shared")
		if err != nil {
			t.Fatal(err)
		}
		requireHook(t, "the token's hook", got, holder)
	})

	t.Run("of concurrent creates of one token by many runs exactly one wins", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		const n = 8
		type owned struct {
			run    *backend.WorkflowRun
			worker string
		}
		runs := make([]owned, n)
		for i := range runs {
			runs[i].worker = newWorkerID()
			runs[i].run = startRun(t, b, runs[i].worker, backend.CreateWorkflowRunParams{})
		}
		errs := make([]error, n)
		hooks := make([]*backend.Hook, n)
		var wg sync.WaitGroup
		for i := range runs {
			wg.Go(func() {
				hooks[i], errs[i] = hookStore(t, b).CreateHook(t.Context(), hookParams(runs[i].run, runs[i].worker, "approval", "contested"))
			})
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("runs %s and %s both created a hook with the token", runs[winner].run.ID, runs[i].run.ID)
			case err == nil:
				winner = i
			case !errors.Is(err, backend.ErrHookConflict):
				t.Fatalf("CreateHook of run %s: %v, want success or ErrHookConflict", runs[i].run.ID, err)
			}
		}
		if winner < 0 {
			t.Fatal("no concurrent create won the token")
		}
		got, err := hookStore(t, b).GetHookByToken(t.Context(), "contested")
		if err != nil {
			t.Fatal(err)
		}
		requireHook(t, "the token's hook", got, hooks[winner])
	})

	t.Run("fences CreateHook on the run's lease, storing nothing", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		hs := hookStore(t, b)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		_, err := hs.CreateHook(t.Context(), hookParams(run, newWorkerID(), "approval", "fenced"))
		requireErrorIs(t, "CreateHook by a worker without the lease", err, backend.ErrNotOwner)
		park(t, b, run.ID, w, time.Now().Add(farFuture))
		_, err = hs.CreateHook(t.Context(), hookParams(run, w, "approval", "fenced"))
		requireErrorIs(t, "CreateHook of a parked run", err, backend.ErrNotOwner)
		ghost := &backend.WorkflowRun{ID: "wrun_" + randomHex(8)}
		_, err = hs.CreateHook(t.Context(), hookParams(ghost, w, "approval", "fenced"))
		requireErrorIs(t, "CreateHook of a missing run", err, backend.ErrRunNotFound)
		requireErrorIs(t, "CreateHook of a missing run", err, backend.ErrNotOwner)
		if got := listHooks(t, b, run.ID); len(got) != 0 {
			t.Fatalf("refused creates stored hooks %+v", got)
		}
		if _, err := hs.GetHookByToken(t.Context(), "fenced"); !errors.Is(err, backend.ErrHookNotFound) {
			t.Fatalf("GetHookByToken after refused creates = %v, want ErrHookNotFound", err)
		}
	})

	t.Run("refuses hostile params with ErrInvalidArgument naming the field, storing nothing", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		hs := hookStore(t, b)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		for _, c := range []struct {
			name, field string
			edit        func(*backend.CreateHookParams)
		}{
			{"a token with U+0000", "hook token", func(p *backend.CreateHookParams) { p.Token = "a\x00b" }},
			{"a token of invalid UTF-8", "hook token", func(p *backend.CreateHookParams) { p.Token = "a\xffb" }},
			{"an empty token", "hook token", func(p *backend.CreateHookParams) { p.Token = "" }},
			{"a token over the limit", "hook token", func(p *backend.CreateHookParams) { p.Token = strings.Repeat("t", backend.MaxTokenLength+1) }},
			{"metadata that is not JSON", "hook metadata", func(p *backend.CreateHookParams) { p.Metadata = json.RawMessage(`{"a":`) }},
			{"a step name with U+0000", "step name", func(p *backend.CreateHookParams) { p.StepName = "s\x00" }},
			{"an id of invalid UTF-8", "hook id", func(p *backend.CreateHookParams) { p.ID = "hook_\xc3" }},
		} {
			p := hookParams(run, w, "approval", "good-token")
			c.edit(&p)
			_, err := hs.CreateHook(t.Context(), p)
			requireErrorIs(t, "CreateHook with "+c.name, err, backend.ErrInvalidArgument)
			if !strings.Contains(err.Error(), c.field) {
				t.Fatalf("CreateHook with %s: error %q does not name the %s", c.name, err, c.field)
			}
		}
		if got := listHooks(t, b, run.ID); len(got) != 0 {
			t.Fatalf("refused creates stored hooks %+v", got)
		}
	})

	t.Run("keeps payloads delivered before anyone waits, and returns them in order", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		h := createHook(t, b, run, w, "approval", "buffered")
		payloads := []string{`{"n":1}`, `"two \u0000 with a NUL"`, ``, `[3,{"deep":[true]}]`}
		for i, data := range payloads {
			start := time.Now()
			p := resumeHook(t, b, "buffered", data)
			if p.Seq != int64(i+1) {
				t.Fatalf("payload %d got seq %d", i+1, p.Seq)
			}
			requireTimeIn(t, "payload created_at", &p.CreatedAt, since(start))
		}
		payloads[2] = `null` // nil is stored as JSON null
		requirePayloads(t, b, h.ID, payloads...)
		got, err := hookStore(t, b).GetHookByToken(t.Context(), "buffered")
		if err != nil || got.Payloads != int64(len(payloads)) {
			t.Fatalf("GetHookByToken = %+v, %v; want %d payloads counted", got, err, len(payloads))
		}
	})

	t.Run("numbers concurrent deliveries 1 to N, none lost", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		h := createHook(t, b, run, w, "approval", "busy")
		const n = 20
		seqs := make([]int64, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, p, err := hookStore(t, b).ResumeHook(t.Context(), "busy", json.RawMessage(fmt.Sprint(i)))
				if err != nil {
					t.Errorf("ResumeHook %d: %v", i, err)
					return
				}
				seqs[i] = p.Seq
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		slices.Sort(seqs)
		for i, s := range seqs {
			if s != int64(i+1) {
				t.Fatalf("sequence numbers %v, want 1 to %d each once", seqs, n)
			}
		}
		seen := map[string]bool{}
		for after := int64(0); after < n; after++ {
			p, ok, err := hookStore(t, b).NextHookPayload(t.Context(), h.ID, after)
			if err != nil || !ok || p.Seq != after+1 {
				t.Fatalf("NextHookPayload(%d) = %+v, %v, %v", after, p, ok, err)
			}
			seen[string(p.Data)] = true
		}
		if len(seen) != n {
			t.Fatalf("%d distinct payloads stored, want %d", len(seen), n)
		}
	})

	t.Run("refuses an unknown token with ErrHookNotFound and a bad one or a bad payload with ErrInvalidArgument, storing nothing", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		hs := hookStore(t, b)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		h := createHook(t, b, run, w, "approval", "known")
		_, _, err := hs.ResumeHook(t.Context(), "unknown", json.RawMessage(`1`))
		requireErrorIs(t, "ResumeHook of an unknown token", err, backend.ErrHookNotFound)
		_, err = hs.GetHookByToken(t.Context(), "unknown")
		requireErrorIs(t, "GetHookByToken of an unknown token", err, backend.ErrHookNotFound)
		for _, token := range []string{"kno\x00wn", "known\xff", ""} {
			_, _, err = hs.ResumeHook(t.Context(), token, json.RawMessage(`1`))
			requireErrorIs(t, fmt.Sprintf("ResumeHook(%q)", token), err, backend.ErrInvalidArgument)
			if !strings.Contains(err.Error(), "hook token") {
				t.Fatalf("ResumeHook(%q): error %q does not name the hook token", token, err)
			}
			_, err = hs.GetHookByToken(t.Context(), token)
			requireErrorIs(t, fmt.Sprintf("GetHookByToken(%q)", token), err, backend.ErrInvalidArgument)
		}
		for _, data := range []string{`{"a":`, "\"\xff\"", `"\ud800"`} {
			_, _, err = hs.ResumeHook(t.Context(), "known", json.RawMessage(data))
			requireErrorIs(t, fmt.Sprintf("ResumeHook with payload %q", data), err, backend.ErrInvalidArgument)
			if !strings.Contains(err.Error(), "hook payload") {
				t.Fatalf("ResumeHook with payload %q: error %q does not name the hook payload", data, err)
			}
		}
		requirePayloads(t, b, h.ID)
		if got := listHooks(t, b, run.ID); len(got) != 1 || got[0].Payloads != 0 {
			t.Fatalf("hooks after refused deliveries = %+v, want one with no payload", got)
		}
	})

	testHookDisposal(t, s)
	testHookWakeUps(t, s)

	t.Run("lists a run's hooks oldest first; an unknown run has none", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		other := startRun(t, b, newWorkerID(), backend.CreateWorkflowRunParams{})
		var want []*backend.Hook
		for i := range 3 {
			want = append(want, createHook(t, b, run, w, fmt.Sprintf("step-%d", i), fmt.Sprintf("list-%d", i)))
		}
		createHook(t, b, other, *other.WorkerID, "elsewhere", "list-other")
		resumeHook(t, b, "list-1", `1`)
		want[1].Payloads = 1
		got := listHooks(t, b, run.ID)
		if len(got) != len(want) {
			t.Fatalf("ListHooks = %d hooks, want %d", len(got), len(want))
		}
		slices.SortStableFunc(want, func(a, b *backend.Hook) int {
			if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
		for i := range got {
			requireHook(t, fmt.Sprintf("hook %d", i), &got[i], want[i])
		}
		if got := listHooks(t, b, "wrun_"+randomHex(8)); len(got) != 0 {
			t.Fatalf("ListHooks of an unknown run = %+v", got)
		}
	})
}
