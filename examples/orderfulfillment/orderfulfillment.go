// Package orderfulfillment is the order-fulfillment saga as a DAG
// workflow (package dag): validate stock ∥ validate fraud → charge card →
// emit invoice → send email ∥ update analytics, with the card refunded
// and the invoice voided when a later step fails for good. The definition
// is the YAML file order.yaml, whose handlers are registered here in Go.
// A step can be made to fail on purpose, to watch compensation happen.
package orderfulfillment

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/dag"
)

//go:embed order.yaml
var definitionYAML []byte

// WorkflowName is the name of the DAG workflow in order.yaml.
const WorkflowName = "order-fulfillment"

// Definition returns the workflow's definition, parsed from order.yaml.
func Definition() (dag.Definition, error) { return dag.Parse(definitionYAML) }

// Order is the run's input.
type Order struct {
	ID          string `json:"id"`
	Email       string `json:"email"`
	SKU         string `json:"sku"`
	Quantity    int    `json:"quantity"`
	AmountCents int    `json:"amountCents"`
}

// DefaultOrder is the order [Run] places when Options.Order is zero.
var DefaultOrder = Order{ID: "ord-42", Email: "ada@example.com", SKU: "BOOK-1", Quantity: 2, AmountCents: 4200}

// Options configure [Run]; the zero value places DefaultOrder with nothing
// failing.
type Options struct {
	// Order is the order to fulfil; zero means DefaultOrder.
	Order Order
	// Fail names a step whose handler fails; "" for none.
	Fail string
	// FailAttempts is how many attempts of Fail fail before one succeeds;
	// 0 means every attempt, so the step fails for good after its
	// retries and the run is compensated.
	FailAttempts int
	// Retries, if not nil, replaces every step's retries (the definition
	// says nothing, so 3: up to 4 executions 1, 2 and 4 s apart).
	Retries *int
	// Out receives a line per handler execution; nil discards them.
	Out io.Writer
	// Worker configures the in-process worker.
	Worker ow.WorkerOptions
}

// Result is what [Run] did.
type Result struct {
	// RunID is the run's id.
	RunID string
	// Status is the run's DAG status at its end.
	Status *dag.RunStatus
}

// Run defines the workflow on b, executes one run of it with an
// in-process worker, and returns its final status: completed, or — when
// opts.Fail makes a step fail for good — compensated (or failed, when the
// failing step comes before anything that can be compensated). It fails
// if opts.Fail names no step, or with ctx's error.
func Run(ctx context.Context, b backend.Backend, opts Options) (*Result, error) {
	d, err := Definition()
	if err != nil {
		return nil, err
	}
	if opts.Fail != "" && !slices.ContainsFunc(d.Steps, func(s dag.Step) bool { return s.Name == opts.Fail }) {
		return nil, fmt.Errorf("-fail %q is not a step of %s", opts.Fail, WorkflowName)
	}
	if opts.Retries != nil {
		for i := range d.Steps {
			d.Steps[i].Retries = opts.Retries
		}
	}
	if opts.Order == (Order{}) {
		opts.Order = DefaultOrder
	}
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	c := ow.NewClient(b)
	eng := dag.New(c, dag.Options{Handlers: Handlers(out, opts.Fail, opts.FailAttempts), Now: opts.Worker.Now})
	if _, err := eng.Define(ctx, d); err != nil {
		return nil, err
	}
	w := ow.NewWorker(b, opts.Worker)
	if err := w.Register(eng.Workflow(WorkflowName)); err != nil {
		return nil, err
	}
	if err := w.Start(ctx); err != nil {
		return nil, err
	}
	defer w.Stop(context.WithoutCancel(ctx))
	h, err := eng.Start(ctx, WorkflowName, opts.Order)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "started run %s of %s\n", h.ID, WorkflowName)
	if _, err := h.Result(ctx); err != nil {
		var failed *ow.RunFailedError
		if !errors.As(err, &failed) {
			return nil, err
		}
	}
	st, err := eng.Status(ctx, h.ID)
	if err != nil {
		return nil, err
	}
	return &Result{RunID: h.ID, Status: st}, nil
}

// printer serializes the handlers' lines.
type printer struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *printer) printf(sc dag.StepContext, format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	what := sc.Step
	if sc.Compensation {
		what = "undo " + sc.Step
	}
	fmt.Fprintf(p.w, "  %-22s %s (attempt %d)\n", what, fmt.Sprintf(format, args...), sc.Attempt)
}

// Handlers returns the workflow's handlers, printing a line per execution
// to out. The handler of the step named fail returns an error on its
// first failAttempts attempts (every attempt when 0).
func Handlers(out io.Writer, fail string, failAttempts int) map[string]dag.Handler {
	p := &printer{w: out}
	type step = func(sc dag.StepContext, o Order) (any, error)
	wrap := func(f step) dag.Handler {
		return func(ctx context.Context, sc dag.StepContext) (any, error) {
			var o Order
			if err := sc.DecodeInput(&o); err != nil {
				return nil, ow.NonRetryable(err)
			}
			if !sc.Compensation && sc.Step == fail && (failAttempts == 0 || sc.Attempt <= failAttempts) {
				p.printf(sc, "fails (injected with -fail %s)", fail)
				return nil, fmt.Errorf("injected failure of %s", fail)
			}
			return f(sc, o)
		}
	}
	return map[string]dag.Handler{
		"validateStock": wrap(func(sc dag.StepContext, o Order) (any, error) {
			p.printf(sc, "%d × %s in stock", o.Quantity, o.SKU)
			return map[string]any{"sku": o.SKU, "available": true}, nil
		}),
		"validateFraud": wrap(func(sc dag.StepContext, o Order) (any, error) {
			p.printf(sc, "fraud score 3/100 for %s", o.Email)
			return map[string]any{"score": 3}, nil
		}),
		"chargeCard": wrap(func(sc dag.StepContext, o Order) (any, error) {
			id := "ch_" + o.ID
			p.printf(sc, "charged %d cents (%s)", o.AmountCents, id)
			return map[string]any{"chargeId": id, "amountCents": o.AmountCents}, nil
		}),
		"refundCard": wrap(func(sc dag.StepContext, o Order) (any, error) {
			var charge struct {
				ChargeID string `json:"chargeId"`
			}
			if _, done := sc.PreviousSteps["charge-card"]; !done {
				// The failed step's own compensation runs too (as in
				// pgshift): charge-card failed, there is nothing to refund.
				p.printf(sc, "nothing to refund: the charge did not complete")
				return map[string]any{"refunded": nil}, nil
			}
			if err := sc.DecodeOutput("charge-card", &charge); err != nil {
				return nil, ow.NonRetryable(err)
			}
			p.printf(sc, "refunded charge %s: %s failed", charge.ChargeID, sc.FailedStep)
			return map[string]any{"refunded": charge.ChargeID}, nil
		}),
		"emitInvoice": wrap(func(sc dag.StepContext, o Order) (any, error) {
			id := "inv_" + o.ID
			p.printf(sc, "emitted invoice %s", id)
			return map[string]any{"invoiceId": id}, nil
		}),
		"voidInvoice": wrap(func(sc dag.StepContext, o Order) (any, error) {
			var inv struct {
				InvoiceID string `json:"invoiceId"`
			}
			if _, done := sc.PreviousSteps["emit-invoice"]; !done {
				p.printf(sc, "nothing to void: the invoice was not emitted")
				return map[string]any{"voided": nil}, nil
			}
			if err := sc.DecodeOutput("emit-invoice", &inv); err != nil {
				return nil, ow.NonRetryable(err)
			}
			p.printf(sc, "voided invoice %s", inv.InvoiceID)
			return map[string]any{"voided": inv.InvoiceID}, nil
		}),
		"sendEmail": wrap(func(sc dag.StepContext, o Order) (any, error) {
			p.printf(sc, "emailed the invoice to %s", o.Email)
			return map[string]any{"to": o.Email}, nil
		}),
		"updateAnalytics": wrap(func(sc dag.StepContext, o Order) (any, error) {
			p.printf(sc, "recorded the sale of %d × %s", o.Quantity, o.SKU)
			return map[string]any{"recorded": true}, nil
		}),
	}
}

// WriteStatus writes a run's DAG status as a table, steps in declaration
// order.
func WriteStatus(w io.Writer, st *dag.RunStatus) error {
	fmt.Fprintf(w, "run %s: %s\n", st.RunID, st.Status)
	if st.Error != nil {
		fmt.Fprintf(w, "  %s\n", st.Error.Message)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSTATUS\tATTEMPTS\tCOMPENSATION\tTOOK")
	for _, s := range st.Definition.Steps {
		ss := st.Steps[s.Name]
		comp := "-"
		if c := ss.Compensation; c != nil {
			comp = fmt.Sprintf("%s %s", s.Compensate, c.Status)
		}
		took := "-"
		if ss.StartedAt != nil && ss.CompletedAt != nil {
			took = ss.CompletedAt.Sub(*ss.StartedAt).Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", s.Name, ss.Status, ss.Attempts, comp, took)
	}
	return tw.Flush()
}
