package openflow

import (
	"context"

	ow "github.com/openworkflow-go/openworkflow"
)

// stepsPage is the page size runSteps reads with: the backends' largest
// (backend.MaxPageSize).
const stepsPage = 1000

// runSteps returns every step attempt of run runID, oldest first, reading
// all pages of Client.ListSteps.
func runSteps(ctx context.Context, c *ow.Client, runID string) ([]ow.StepAttempt, error) {
	var all []ow.StepAttempt
	p := ow.ListStepAttemptsParams{WorkflowRunID: runID, Limit: stepsPage}
	for {
		page, err := c.ListSteps(ctx, p)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Data...)
		if page.Next == nil || len(page.Data) == 0 {
			return all, nil
		}
		p.After = *page.Next
	}
}
