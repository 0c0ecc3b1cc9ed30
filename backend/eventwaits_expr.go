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
