package openflow

import (
	"encoding/json"
	"strings"
)

// resultsScope holds the results of the modules run so far, by id, and
// looks ids up through its parents: outer steps are visible inside
// branches and loop iterations. A scope is written only by the goroutine
// running its module list, and read by child scopes only while that
// goroutine waits for them, so it needs no lock.
type resultsScope struct {
	parent *resultsScope
	m      map[string]json.RawMessage
	order  []string
}

func newResultsScope(parent *resultsScope) *resultsScope {
	return &resultsScope{parent: parent, m: map[string]json.RawMessage{}}
}

func (s *resultsScope) set(id string, v json.RawMessage) {
	if _, ok := s.m[id]; !ok {
		s.order = append(s.order, id)
	}
	s.m[id] = v
}

func (s *resultsScope) get(id string) (json.RawMessage, bool) {
	for sc := s; sc != nil; sc = sc.parent {
		if v, ok := sc.m[id]; ok {
			return v, true
		}
	}
	return nil, false
}

func (s *resultsScope) ids() []string {
	seen := map[string]bool{}
	var out []string
	for sc := s; sc != nil; sc = sc.parent {
		for _, id := range sc.order {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// mergeInto copies this scope's own results into dst (an id read from
// outside a loop or branch gives the most recent value, as in Windmill).
func (s *resultsScope) mergeInto(dst *resultsScope) {
	for _, id := range s.order {
		dst.set(id, s.m[id])
	}
}

// resumeState is what the suspend of the previous module received:
// resume (the last payload), resumes (all, oldest first) and approvers.
type resumeState struct {
	Resumes   []json.RawMessage `json:"resumes"`
	Approvers []string          `json:"approvers"`
}

func (r resumeState) vars(into map[string]json.RawMessage) {
	resume := json.RawMessage("null")
	if n := len(r.Resumes); n > 0 {
		resume = r.Resumes[n-1]
	}
	approvers := r.Approvers
	if approvers == nil {
		approvers = []string{}
	}
	into["resume"] = resume
	into["resumes"] = encodeArray(r.Resumes)
	into["approvers"] = mustJSON(approvers)
}

// errorOf is the `error` of an expression scope: previous_result.error, or
// for an array of results (a failed loop or branchall) the errors of its
// items combined as {name: "MultipleErrors", message, errors}.
func errorOf(prev json.RawMessage) json.RawMessage {
	if e, ok := field(prev, "error"); ok {
		return e
	}
	items, ok := arrayItems(prev)
	if !ok {
		return json.RawMessage("null")
	}
	var errs []json.RawMessage
	var msgs []string
	for _, it := range items {
		e, ok := field(it, "error")
		if !ok {
			continue
		}
		errs = append(errs, e)
		var m struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(e, &m)
		msgs = append(msgs, m.Message)
	}
	switch len(errs) {
	case 0:
		return json.RawMessage("null")
	case 1:
		return errs[0]
	}
	return mustJSON(map[string]any{"name": "MultipleErrors", "message": strings.Join(msgs, "\n"), "errors": errs})
}

// failure wraps an inner error object as a module result {"error": e}.
func failure(e json.RawMessage) json.RawMessage {
	return encodeObject([]member{{key: "error", val: e}})
}

// withStepID adds "step_id": id to a failure result's error object when it
// has none (Windmill's queue adds it to a failed step's error).
func withStepID(res json.RawMessage, id string) json.RawMessage {
	e, ok := field(res, "error")
	if !ok || jsonKind(e) != "an object" {
		return res
	}
	if _, has := field(e, "step_id"); has {
		return res
	}
	return failure(withKey(e, "step_id", jsonString(id)))
}

// executionErr is the failure result of a module whose expression (or
// iterator, or predicate) failed: Windmill's ExecutionErr with step_id.
func executionErr(id, message string) json.RawMessage {
	return failure(mustJSON(struct {
		Name    string `json:"name"`
		Message string `json:"message"`
		StepID  string `json:"step_id"`
	}{"ExecutionErr", "execution error:\n" + message, id}))
}
