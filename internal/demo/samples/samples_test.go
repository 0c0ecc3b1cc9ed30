package samples_test

import (
	"encoding/json"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/demo/samples"
	"github.com/openworkflow-go/openworkflow/owtest"
)

func TestHelloGreetsByNameOrTheWorld(t *testing.T) {
	env := owtest.New(t, ow.WorkerOptions{}, samples.Definitions()...)
	for in, want := range map[string]string{"Ada": "Hello, Ada!", "": "Hello, world!"} {
		h, err := samples.Hello.Start(t.Context(), env.Client, samples.HelloInput{Name: in})
		if err != nil {
			t.Fatal(err)
		}
		env.Drain()
		out, err := h.Result(t.Context())
		if err != nil || out.Greeting != want {
			t.Errorf("hello %q = %+v, %v; want %q", in, out, err, want)
		}
	}
}

// stepStatuses lists a run's step attempts as "name status".
func stepStatuses(env *owtest.Env, id string) []string {
	var out []string
	for _, s := range env.Steps(id) {
		out = append(out, s.StepName+" "+string(s.Status))
	}
	return out
}

func TestOrderRetriesTheChargeSleepsShipsAndWaitsForDelivery(t *testing.T) {
	env := owtest.New(t, ow.WorkerOptions{}, samples.Definitions()...)
	h, err := samples.Order.Start(t.Context(), env.Client, samples.OrderInput{OrderID: "ord-7"})
	if err != nil {
		t.Fatal(err)
	}
	env.Drain() // charge-card declined on the first pass: retried in 1 s
	if run := env.Run(h.ID); run.Status != backend.RunPending {
		t.Fatalf("after the declined charge the run is %s, want pending (a step retry)", run.Status)
	}
	env.Clock.Advance(time.Second)
	env.Drain() // charged, then parked on the 2 s cool-off
	env.Clock.Advance(2 * time.Second)
	env.Drain() // the child ship run completes and wakes the parent, which waits for the signal
	if run := env.Run(h.ID); run.Status != backend.RunRunning || run.WorkerID != nil {
		t.Fatalf("the run should be parked on the delivery signal, is %s (worker %v); steps %v", run.Status, run.WorkerID, stepStatuses(env, h.ID))
	}
	reached, err := env.Client.SendSignal(t.Context(), samples.DeliveredSignal("ord-7"), map[string]string{"by": "courier"}, "")
	if err != nil || len(reached) != 1 || reached[0] != h.ID {
		t.Fatalf("signal reached %v, %v; want the order run %s", reached, err, h.ID)
	}
	env.Drain()
	out, err := h.Result(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := samples.OrderOutput{OrderID: "ord-7", ChargeID: "ch_ord-7_4200", Tracking: "trk_ord-7", Delivered: true, Receipt: "receipt for ord-7: delivered"}
	if out != want {
		t.Errorf("output %+v, want %+v", out, want)
	}
	got, _ := json.Marshal(stepStatuses(env, h.ID))
	wantSteps, _ := json.Marshal([]string{"reserve-stock completed", "charge-card failed", "charge-card completed", "cool-off completed",
		"samples/ship completed", "order/ord-7/delivered completed", "send-receipt completed"})
	if string(got) != string(wantSteps) {
		t.Errorf("steps %s\nwant %s", got, wantSteps)
	}
}

// What ow dev's hint does (issue 20, item 9): the delivery signal is sent
// to the run right after it starts, long before it waits (the charge is
// retried, the cool-off slept, the child shipped); the run keeps it and
// ends delivered.
func TestOrderReceivesADeliverySignalSentBeforeItWaits(t *testing.T) {
	env := owtest.New(t, ow.WorkerOptions{}, samples.Definitions()...)
	h, err := samples.Order.Start(t.Context(), env.Client, samples.OrderInput{})
	if err != nil {
		t.Fatal(err)
	}
	sig, err := env.Client.SignalRun(t.Context(), h.ID, samples.DeliveredSignal("ord-1"), map[string]string{"by": "courier"}, "")
	if err != nil || sig.Delivered {
		t.Fatalf("SignalRun = %+v, %v; want the signal kept (the run does not wait yet)", sig, err)
	}
	env.Drain()
	env.Clock.Advance(time.Second)
	env.Drain()
	env.Clock.Advance(2 * time.Second)
	env.Drain()
	out, err := h.Result(t.Context())
	if err != nil || !out.Delivered || out.Receipt != "receipt for ord-1: delivered" {
		t.Errorf("output %+v, %v; want delivered", out, err)
	}
}

func TestOrderGoesOnWithoutTheSignalAfterItsWait(t *testing.T) {
	env := owtest.New(t, ow.WorkerOptions{}, samples.Definitions()...)
	none, zero, wait := -1, 0.0, 5.0
	h, err := samples.Order.Start(t.Context(), env.Client, samples.OrderInput{FailCharges: &none, CoolOffSeconds: &zero, DeliveryWaitSeconds: &wait})
	if err != nil {
		t.Fatal(err)
	}
	env.Drain()
	env.Clock.Advance(5 * time.Second)
	env.Drain()
	out, err := h.Result(t.Context())
	if err != nil || out.Delivered || out.Receipt != "receipt for ord-1: shipped, delivery not confirmed" {
		t.Errorf("output %+v, %v; want undelivered with its receipt", out, err)
	}
}

func TestOrderFailsWhenEveryChargeAttemptIsDeclined(t *testing.T) {
	env := owtest.New(t, ow.WorkerOptions{}, samples.Definitions()...)
	five := 5
	h, err := samples.Order.Start(t.Context(), env.Client, samples.OrderInput{FailCharges: &five})
	if err != nil {
		t.Fatal(err)
	}
	for range 6 {
		env.Drain()
		env.Clock.Advance(10 * time.Second)
	}
	if run := env.Run(h.ID); run.Status != backend.RunFailed {
		t.Fatalf("run is %s, want failed after 5 declined charges; steps %v", run.Status, stepStatuses(env, h.ID))
	}
}
