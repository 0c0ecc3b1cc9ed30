package backend

// PayloadBytes is the number of bytes of r's JSON values (config,
// context, input, output, error): what a list page bounded by
// [ListWorkflowRunsParams.MaxBytes] counts of it.
func (r *WorkflowRun) PayloadBytes() int {
	return len(r.Config) + len(r.Context) + len(r.Input) + len(r.Output) + len(r.Error)
}

// PayloadBytes is the number of bytes of a's JSON values (config,
// context, output, error), as [WorkflowRun.PayloadBytes].
func (a *StepAttempt) PayloadBytes() int {
	return len(a.Config) + len(a.Context) + len(a.Output) + len(a.Error)
}

// PageBudget is the byte bound of one list page being read
// ([ListWorkflowRunsParams.MaxBytes]); a backend asks Fits of each row in
// the page's order. The zero value, or a non-positive Max, bounds nothing.
type PageBudget struct {
	// Max is the most bytes the page's rows hold together.
	Max        int
	used, rows int
}

// Fits counts a row of n bytes and reports whether the page may hold it:
// always for the page's first row, then while the sum stays within Max.
// A backend ends the page before the first row that does not fit, and
// pages on from that row, as it does after Limit rows.
func (b *PageBudget) Fits(n int) bool {
	if b.Max > 0 && b.rows > 0 && b.used+n > b.Max {
		return false
	}
	b.used += n
	b.rows++
	return true
}
