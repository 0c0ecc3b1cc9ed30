package backend

import (
	"encoding/json"
	"fmt"

	"github.com/openworkflow-go/openworkflow/eventexpr"
)

// ExprEvent is e as a CEL match sees it (package eventexpr): name, id,
// key ("" when none), data decoded from JSON, time its CreatedAt.
func ExprEvent(e *EventRecord) (eventexpr.Event, error) {
	ev := eventexpr.Event{Name: e.Name, ID: e.ID, Time: e.CreatedAt}
	if e.Key != nil {
		ev.Key = *e.Key
	}
	if len(e.Data) > 0 {
		if err := json.Unmarshal(e.Data, &ev.Data); err != nil {
			return ev, fmt.Errorf("data of event %s: %w", e.ID, err)
		}
	}
	return ev, nil
}

// EventWaitKeys returns the index (path key, canonical value) pairs under
// which an open wait could be delivered e: for each distinct index path
// of the open waits on e's name (paths, as IndexKey.PathKey), e's value
// there, when it is a scalar. A publish looks up the waits by these pairs.
func EventWaitKeys(e eventexpr.Event, paths []string) (pathKeys, values []string) {
	for _, pk := range paths {
		p, err := eventexpr.ParsePathKey(pk)
		if err != nil {
			continue
		}
		if v, ok := eventexpr.PathValue(e, p); ok {
			pathKeys, values = append(pathKeys, pk), append(values, v)
		}
	}
	return pathKeys, values
}

// MaxUnindexedCancelRunsPerPublish bounds the unfinished runs of a
// workflow a cancelOn declaration without an input equality (see
// [CancelOnLookup]) evaluates per published event, oldest first: 1,000.
// Beyond it an event can cancel only the oldest 1,000 of them; give such a
// condition an equality event.<path> == input.<path> to look runs up by
// their input instead.
const MaxUnindexedCancelRunsPerPublish = 1000

// CancelOnLookup finds in a cancelOn condition the equality a publish
// looks runs up by instead of evaluating the condition on each unfinished
// run of the workflow: the first top-level conjunct event.<path> ==
// input.<inputPath> (eventexpr.IndexKey with an InputPath) whose value in
// ev is a scalar other than null. It returns the input path and that
// value as JSON: a run can match only if its input holds a JSON value
// equal to it at the path (the lookup finds candidates; the condition
// still decides). ok is false when there is no such conjunct (or the
// condition does not compile); the publish then evaluates the condition
// on at most [MaxUnindexedCancelRunsPerPublish] runs.
func CancelOnLookup(condition string, ev eventexpr.Event) (inputPath []string, value json.RawMessage, ok bool) {
	if condition == "" {
		return nil, nil, false
	}
	x, err := eventexpr.Compile(condition)
	if err != nil {
		return nil, nil, false
	}
	for _, k := range x.IndexKeys() {
		if k.InputPath == nil {
			continue
		}
		v, ok := eventexpr.PathScalar(ev, k.Path)
		if !ok || v == nil {
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			continue
		}
		return k.InputPath, raw, true
	}
	return nil, nil, false
}
