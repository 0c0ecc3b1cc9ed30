// Package history holds a run's step history during one execution pass:
// which durable keys already completed (memoized results), failure counts
// per step name for retry budgets, running waits, and the resolution of
// durable keys in call order ("name", "name:1", "name:2", …), as in
// OpenWorkflow's worker/step-history.ts.
package history

import (
	"encoding/json"
	"slices"
	"strconv"
	"sync"

	"github.com/openworkflow-go/openworkflow/backend"
)

// StepLimit is the maximum number of step attempts (of every kind) one run
// may have, as in OpenWorkflow.
const StepLimit = 1000

// History is the step ledger of one execution pass. It is safe for
// concurrent use by parallel steps.
type History struct {
	mu          sync.Mutex
	completed   map[string]*backend.StepAttempt
	running     map[string]*backend.StepAttempt
	lastFailed  map[string]*backend.StepAttempt
	failedCount map[string]int
	ids         map[string]struct{} // every attempt id recorded: Count
	retryBase   int                 // the run's attempts when it was last retried by hand (see RetryBase)

	used      map[string]bool
	nextIndex map[string]int
}

// New builds the ledger from a run's attempts in creation order.
func New(attempts []backend.StepAttempt) *History {
	h := &History{
		completed:   make(map[string]*backend.StepAttempt),
		running:     make(map[string]*backend.StepAttempt),
		lastFailed:  make(map[string]*backend.StepAttempt),
		failedCount: make(map[string]int),
		ids:         make(map[string]struct{}),
		used:        make(map[string]bool),
		nextIndex:   make(map[string]int),
	}
	for i := range attempts {
		h.record(&attempts[i])
	}
	return h
}

// Record adds a new or updated attempt (created, completed or failed during
// this pass) to the ledger.
func (h *History) Record(a *backend.StepAttempt) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.record(a)
}

func (h *History) record(a *backend.StepAttempt) {
	h.ids[a.ID] = struct{}{}
	if a.Kind == backend.StepRetry {
		// A manual retry of the failed run: failures before it no longer
		// count against any retry budget, and a failed step runs again.
		var mark struct {
			Attempts int `json:"attempts"`
		}
		_ = json.Unmarshal(a.Output, &mark)
		h.retryBase = mark.Attempts
		clear(h.failedCount)
		clear(h.lastFailed)
		return
	}
	prev, seen := h.running[a.StepName]
	switch a.Status.Normalize() {
	case backend.StepCompleted:
		h.completed[a.StepName] = a
		if seen && prev.ID == a.ID {
			delete(h.running, a.StepName)
		}
	case backend.StepFailed:
		h.failedCount[a.StepName]++
		h.lastFailed[a.StepName] = a
		if seen && prev.ID == a.ID {
			delete(h.running, a.StepName)
		}
	case backend.StepRunning:
		h.running[a.StepName] = a
	}
}

// Resolve returns the durable key for the next use of base in this pass:
// base itself the first time, then base:1, base:2, … skipping any key
// already used in this pass (explicit names such as "foo:1" included).
// Call it in the workflow's call order.
func (h *History) Resolve(base string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.used[base] {
		h.used[base] = true
		return base
	}
	for i := h.nextIndex[base] + 1; ; i++ {
		k := base + ":" + strconv.Itoa(i)
		if !h.used[k] {
			h.used[k] = true
			h.nextIndex[base] = i
			return k
		}
	}
}

// Completed returns the completed attempt of key, if any.
func (h *History) Completed(key string) (*backend.StepAttempt, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a, ok := h.completed[key]
	return a, ok
}

// Running returns the running attempt of key, if any.
func (h *History) Running(key string) (*backend.StepAttempt, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a, ok := h.running[key]
	return a, ok
}

// LastFailed returns the most recent failed attempt of key, if any.
func (h *History) LastFailed(key string) (*backend.StepAttempt, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a, ok := h.lastFailed[key]
	return a, ok
}

// Lookup returns the attempt that decides what key's step is now: its
// completed attempt if it has one (a completed step is memoized whatever
// happened around it), else the latest of its last failed attempt and its
// running one (by creation time, then id), so that a running attempt
// orphaned by a crash and followed by a failed re-execution reads failed,
// and a retry executing after a failure reads running.
func (h *History) Lookup(key string) (*backend.StepAttempt, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if a, ok := h.completed[key]; ok {
		return a, true
	}
	f, failed := h.lastFailed[key]
	r, running := h.running[key]
	switch {
	case failed && running:
		if r.CreatedAt.After(f.CreatedAt) || (r.CreatedAt.Equal(f.CreatedAt) && r.ID > f.ID) {
			return r, true
		}
		return f, true
	case failed:
		return f, true
	case running:
		return r, true
	}
	return nil, false
}

// RetryBase is the run's attempts (claims) when it was last retried by
// hand (0 if never): the workflow's retry budget counts the claims after
// it.
func (h *History) RetryBase() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.retryBase
}

// FailedCount is the number of failed attempts of key: its retry budget
// used so far.
func (h *History) FailedCount(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failedCount[key]
}

// Count is the number of attempts of every kind the run has.
func (h *History) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ids)
}

// RunningWaits returns the running attempts of the given kinds.
func (h *History) RunningWaits(kinds ...backend.StepKind) []*backend.StepAttempt {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*backend.StepAttempt
	for _, a := range h.running {
		for _, k := range kinds {
			if a.Kind == k {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// RunningOnly reports whether every running attempt is of one of kinds
// (true when none is running).
func (h *History) RunningOnly(kinds ...backend.StepKind) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range h.running {
		if !slices.Contains(kinds, a.Kind) {
			return false
		}
	}
	return true
}
