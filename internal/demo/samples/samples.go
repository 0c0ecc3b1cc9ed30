// Package samples holds the small workflows `ow dev` registers, so that a
// fresh development server has something to start from the API or the
// dashboard that shows each kind of step:
//
//   - "samples/hello" greets: one step.
//   - "samples/order" fulfils an order: a step, a step that fails on its
//     first attempts and is retried after a backoff, a durable sleep, a
//     child run ("samples/ship"), a wait for a signal with a timeout, and
//     a last step.
//   - "samples/ship" is order's child: two steps.
//
// The names carry the "samples/" prefix so that `ow dev` run in a
// project of its own (one `ow init` made, whose workflow is "hello")
// never executes that project's runs with these workflows.
//
// The workflows do no I/O; they only shape runs worth looking at.
package samples

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
)

// Workflow names, as stored in workflow_runs.workflow_name.
const (
	HelloName = "samples/hello"
	OrderName = "samples/order"
	ShipName  = "samples/ship"
)

// HelloInput is hello's input: {"name": "Ada"}.
type HelloInput struct {
	// Name is who to greet; "" greets the world.
	Name string `json:"name"`
}

// HelloOutput is hello's output: {"greeting": "Hello, Ada!"}.
type HelloOutput struct {
	Greeting string `json:"greeting"`
}

// Hello greets in one step.
var Hello = ow.Define(ow.Spec{Name: HelloName}, func(ctx ow.Context, in HelloInput) (HelloOutput, error) {
	greeting, err := ow.Run(ctx, "greet", func(context.Context) (string, error) {
		return fmt.Sprintf("Hello, %s!", cmp.Or(in.Name, "world")), nil
	})
	if err != nil {
		return HelloOutput{}, err
	}
	return HelloOutput{Greeting: greeting}, nil
})

// OrderInput is order's input. Every field may be left out.
type OrderInput struct {
	// OrderID names the order; default "ord-1".
	OrderID string `json:"orderId"`
	// AmountCents is charged to the card; default 4200.
	AmountCents int `json:"amountCents"`
	// FailCharges is how many passes' attempts of charge-card fail
	// (declined, retried after 1 s, 2 s, …) before one succeeds: default
	// 1, so a retry is visible; 0 or less: none fails; 5 or more: the step
	// exhausts its 5 attempts and the run fails.
	FailCharges *int `json:"failCharges"`
	// CoolOffSeconds is the durable sleep between the charge and the
	// shipping; default 2.
	CoolOffSeconds *float64 `json:"coolOffSeconds"`
	// DeliveryWaitSeconds is how long the run waits for the signal
	// DeliveredSignal(OrderID) before it goes on without it; default 30.
	DeliveryWaitSeconds *float64 `json:"deliveryWaitSeconds"`
}

// OrderOutput is order's output.
type OrderOutput struct {
	OrderID   string `json:"orderId"`
	ChargeID  string `json:"chargeId"`
	Tracking  string `json:"tracking"`
	Delivered bool   `json:"delivered"`
	Receipt   string `json:"receipt"`
}

// ShipInput is ship's input.
type ShipInput struct {
	OrderID string `json:"orderId"`
}

// ShipOutput is ship's output.
type ShipOutput struct {
	Tracking string `json:"tracking"`
}

// DeliveredSignal is the signal an order run waits for:
// "order/<order id>/delivered". Send it to the run, which keeps it until
// the run waits for it: through the API (POST
// /v1/runs/{id}/signals/order%2Ford-1%2Fdelivered {"data": {"by":
// "courier"}}), `ow runs signal <run id> order/ord-1/delivered`, or
// Client.SignalRun. (A name-addressed send, POST /v1/signals or `ow signal
// send`, reaches the run only if it is waiting at that moment.)
func DeliveredSignal(orderID string) string { return "order/" + orderID + "/delivered" }

// chargePolicy retries a declined charge 1 s, 2 s, 4 s, 8 s apart, 5
// attempts in all.
var chargePolicy = ow.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second, MaximumAttempts: 5}

// errDeclined is the charge's simulated failure.
var errDeclined = errors.New("card declined (simulated by failCharges; the step is retried)")

// Ship packs and labels an order: order's child workflow.
var Ship = ow.Define(ow.Spec{Name: ShipName}, func(ctx ow.Context, in ShipInput) (ShipOutput, error) {
	if _, err := ow.Run(ctx, "pack", func(context.Context) (int, error) { return 1, nil }); err != nil {
		return ShipOutput{}, err
	}
	tracking, err := ow.Run(ctx, "print-label", func(context.Context) (string, error) {
		return "trk_" + in.OrderID, nil
	})
	return ShipOutput{Tracking: tracking}, err
})

// Order fulfils an order (see the package documentation).
var Order = ow.Define(ow.Spec{Name: OrderName}, func(ctx ow.Context, in OrderInput) (OrderOutput, error) {
	id := cmp.Or(in.OrderID, "ord-1")
	out := OrderOutput{OrderID: id}
	if _, err := ow.Run(ctx, "reserve-stock", func(context.Context) (bool, error) { return true, nil }); err != nil {
		return out, err
	}
	failCharges := 1
	if in.FailCharges != nil {
		failCharges = *in.FailCharges
	}
	attempt := ctx.RunInfo().Attempt // the run's claims so far: this pass is the attempt-th
	charge, err := ow.Run(ctx, "charge-card", func(context.Context) (string, error) {
		if attempt <= failCharges {
			return "", errDeclined
		}
		return fmt.Sprintf("ch_%s_%d", id, cmp.Or(in.AmountCents, 4200)), nil
	}, ow.WithRetryPolicy(chargePolicy))
	if err != nil {
		return out, err
	}
	out.ChargeID = charge
	if err := ow.Sleep(ctx, "cool-off", seconds(in.CoolOffSeconds, 2)); err != nil {
		return out, err
	}
	shipped, err := ow.RunWorkflow(ctx, Ship, ShipInput{OrderID: id}, ow.WithTimeout(time.Hour))
	if err != nil {
		return out, err
	}
	out.Tracking = shipped.Tracking
	_, delivered, err := ow.WaitForSignal[any](ctx, DeliveredSignal(id), ow.WithTimeout(seconds(in.DeliveryWaitSeconds, 30)))
	if err != nil {
		return out, err
	}
	out.Delivered = delivered
	out.Receipt, err = ow.Run(ctx, "send-receipt", func(context.Context) (string, error) {
		if delivered {
			return "receipt for " + id + ": delivered", nil
		}
		return "receipt for " + id + ": shipped, delivery not confirmed", nil
	})
	return out, err
})

// seconds is *s seconds, or def when s is nil.
func seconds(s *float64, def float64) time.Duration {
	if s != nil {
		def = *s
	}
	return time.Duration(def * float64(time.Second))
}

// Definitions are the workflows to register on a worker.
func Definitions() []ow.Definition { return []ow.Definition{Hello, Order, Ship} }
