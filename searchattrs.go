package openworkflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/openworkflow-go/openworkflow/backend"
)

// SearchAttributesStep is the durable name of the step that
// [SetSearchAttributes] records (name:1, name:2, … for later calls).
const SearchAttributesStep = "__search_attributes"

// WithSearchAttributes stores attrs with the run, in the transaction that
// inserts it (a run reused by [WithIdempotencyKey] keeps its own). Values
// are Go values of one of the types of [backend.SearchAttributes]:
// string (keyword), []string (keyword list), an integer, a float, bool or
// time.Time. The first value a namespace stores under a name fixes the
// name's type; a value of another type, a bad name (1–64 ASCII letters,
// digits and underscores) or more than the limits (100 names, 2 KiB per
// value, 40 KiB in all) fail the start with an error wrapping
// backend.ErrInvalidSearchAttribute that names the attribute. Queries
// select runs by them (attrs.<name>, docs/queries.md). As Temporal's
// StartWorkflowOptions.TypedSearchAttributes. Several calls merge.
func WithSearchAttributes(attrs map[string]any) StartOption {
	return func(o *startOptions) {
		if o.searchAttributes == nil {
			o.searchAttributes = backend.SearchAttributes{}
		}
		for k, v := range attrs {
			o.searchAttributes[k] = v
		}
	}
}

// SetSearchAttributes sets the run's search attributes named in attrs (a
// nil value removes one) and keeps the others, as Temporal's
// workflow.UpsertTypedSearchAttributes. It is a durable step
// ([SearchAttributesStep]): the first pass writes, a replay returns
// without writing again, so a value set later by other means is not
// overwritten by a replay. Bad attributes (see [WithSearchAttributes])
// fail with a non-retryable *[StepError] wrapping
// backend.ErrInvalidSearchAttribute; a backend that stores no search
// attributes gives backend.ErrNotSupported. Outside a workflow it
// returns [ErrNotInWorkflow].
func SetSearchAttributes(ctx Context, attrs map[string]any) error {
	x, err := execOf(ctx)
	if err != nil {
		return err
	}
	store, ok := x.b.(backend.SearchAttributeStore)
	if !ok {
		return fmt.Errorf("set search attributes: %w", backend.ErrNotSupported)
	}
	runID := x.run.ID
	_, err = Run(ctx, SearchAttributesStep, func(sctx context.Context) (struct{}, error) {
		err := store.UpsertSearchAttributes(sctx, backend.UpsertSearchAttributesParams{WorkflowRunID: runID, Attributes: attrs})
		if errors.Is(err, backend.ErrInvalidSearchAttribute) {
			return struct{}{}, NonRetryable(err)
		}
		return struct{}{}, err
	})
	return err
}
