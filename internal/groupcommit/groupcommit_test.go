package groupcommit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// fakeBatcher records every ApplyWrites call. A call can be held until the
// test lets it go, and a run id can be made to fail.
type fakeBatcher struct {
	mu      sync.Mutex
	calls   [][][]backend.Write
	applied []string // run id and step name of every applied write, in order
	fail    map[string]error
	hold    chan struct{} // when set, each call waits for a receive
	entered chan struct{} // when set, signalled as each call starts
	extra   bool          // report one outcome too many
}

func (f *fakeBatcher) ApplyWrites(_ context.Context, groups [][]backend.Write) []error {
	if f.entered != nil {
		f.entered <- struct{}{}
	}
	if f.hold != nil {
		<-f.hold
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, groups)
	errs := make([]error, len(groups))
	for i, g := range groups {
		if err := f.fail[g[0].WorkflowRunID]; err != nil {
			errs[i] = err
			continue
		}
		for _, w := range g {
			f.applied = append(f.applied, w.WorkflowRunID+"/"+w.Step.StepName)
		}
	}
	if f.extra {
		errs = append(errs, nil)
	}
	return errs
}

func (f *fakeBatcher) appliedWrites() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.applied...)
}

func write(run, step string) backend.Write {
	return backend.Write{Kind: backend.WriteInsertStep, WorkflowRunID: run, WorkerID: "w",
		Step: &backend.StepAttempt{ID: run + "-" + step, StepName: step}}
}

func TestGroupsWaitingWhileACommitIsInFlightShareTheNextCommit(t *testing.T) {
	f := &fakeBatcher{hold: make(chan struct{}), entered: make(chan struct{}, 100)}
	c := New(f)
	first := c.Submit([]backend.Write{write("r0", "a")})
	<-f.entered // the first commit is under way, held
	var groups []*Group
	for i := range 10 { // fewer writes than minOverlapWrites: no second commit starts
		groups = append(groups, c.Submit([]backend.Write{write(fmt.Sprint("r", i+1), "a")}))
	}
	f.hold <- struct{}{} // the first commit ends
	<-f.entered          // the next one starts with all ten waiting
	f.hold <- struct{}{}
	for _, g := range append(groups, first) {
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	c.Wait()
	if len(f.calls) != 2 || len(f.calls[1]) != 10 {
		t.Fatalf("commits of %v groups, want 1 then 10", groupCounts(f.calls))
	}
}

func TestACommitCarriesAtMostMaxBatchWrites(t *testing.T) {
	f := &fakeBatcher{hold: make(chan struct{}), entered: make(chan struct{}, 100)}
	c := New(f)
	c.Submit([]backend.Write{write("r", "first")})
	<-f.entered
	// Queued while the first commit is held: enough writes that a second
	// commit starts at once (minOverlapWrites), and more than one commit
	// can carry.
	var gs []*Group
	for i := range maxBatchWrites + 100 {
		gs = append(gs, c.Submit([]backend.Write{write(fmt.Sprint("r", i), "a")}))
	}
	go func() {
		for range f.entered {
			f.hold <- struct{}{}
		}
	}()
	f.hold <- struct{}{}
	for _, g := range gs {
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	c.Wait()
	close(f.entered)
	total := 0
	for _, n := range groupCounts(f.calls) {
		if n > maxBatchWrites {
			t.Fatalf("a commit carried %d writes, more than %d", n, maxBatchWrites)
		}
		total += n
	}
	if total != maxBatchWrites+101 {
		t.Fatalf("%d writes applied, want %d", total, maxBatchWrites+101)
	}
}

func TestAPassAppliesItsGroupsInTheOrderItMadeThem(t *testing.T) {
	f := &fakeBatcher{}
	c := New(f)
	p := c.NewPass()
	p.Defer(write("r", "1"), true)
	p.FlushAsync() // a branch's result, submitted without waiting
	p.Defer(write("r", "2"), true)
	p.FlushAsync()
	if err := p.Write(write("r", "3")); err != nil {
		t.Fatal(err)
	}
	p.Wait()
	c.Wait()
	if got := fmt.Sprint(f.appliedWrites()); got != "[r/1 r/2 r/3]" {
		t.Fatalf("applied %s, want r/1 r/2 r/3 in order", got)
	}
}

func TestAGroupAfterAFailedOneOfItsPassIsNotApplied(t *testing.T) {
	broken := errors.New("connection lost")
	f := &fakeBatcher{fail: map[string]error{"r": broken}, hold: make(chan struct{}), entered: make(chan struct{}, 10)}
	c := New(f)
	p := c.NewPass()
	p.Defer(write("r", "1"), true)
	p.FlushAsync()
	<-f.entered // r's first group is in flight, held
	done := make(chan error)
	go func() { done <- p.Write(write("r", "2")) }()
	other := c.Submit([]backend.Write{write("other", "x")})
	go func() {
		for range f.entered {
			f.hold <- struct{}{}
		}
	}()
	f.hold <- struct{}{} // r's first group fails
	if err := <-done; !errors.Is(err, broken) {
		t.Fatalf("the later group: %v, want the earlier group's error", err)
	}
	if err := other.Wait(); err != nil {
		t.Fatalf("another pass's group: %v", err)
	}
	p.Wait()
	c.Wait()
	close(f.entered)
	for _, call := range f.calls {
		for _, g := range call {
			if g[0].Step.StepName == "2" {
				t.Fatal("r's second group was sent although its first failed")
			}
		}
	}
}

func TestFlushCommitsEagerWritesAndWaitsForGroupsInFlight(t *testing.T) {
	f := &fakeBatcher{}
	c := New(f)
	p := c.NewPass()
	p.Defer(write("r", "lazy"), false)
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := f.appliedWrites(); len(got) != 0 {
		t.Fatalf("Flush committed a lazy write alone: %v", got)
	}
	p.Defer(write("r", "eager"), true)
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(f.appliedWrites()); got != "[r/lazy r/eager]" {
		t.Fatalf("applied %s, want the lazy write riding with the eager one", got)
	}
	c.Wait()
}

func TestABatcherReportingTheWrongNumberOfOutcomesFailsEveryGroup(t *testing.T) {
	c := New(&fakeBatcher{extra: true})
	if err := c.Submit([]backend.Write{write("r", "a")}).Wait(); err == nil {
		t.Fatal("a commit with one outcome too many was taken as applied")
	}
	c.Wait()
}

func TestWriteOfNothingWaitsForTheGroupsInFlight(t *testing.T) {
	f := &fakeBatcher{hold: make(chan struct{}), entered: make(chan struct{}, 1)}
	c := New(f)
	p := c.NewPass()
	p.Defer(write("r", "1"), true)
	p.FlushAsync()
	<-f.entered
	done := make(chan error)
	go func() { done <- p.Write() }()
	select {
	case <-done:
		t.Fatal("Write() returned while the pass's group was in flight")
	case <-time.After(20 * time.Millisecond):
	}
	f.hold <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	p.Wait()
	c.Wait()
}

func groupCounts(calls [][][]backend.Write) []int {
	var out []int
	for _, c := range calls {
		n := 0
		for _, g := range c {
			n += len(g)
		}
		out = append(out, n)
	}
	return out
}

func TestOnCommitReportsEachCommitsGroupsWritesAndFailures(t *testing.T) {
	f := &fakeBatcher{hold: make(chan struct{}), entered: make(chan struct{}, 100), fail: map[string]error{"bad": errors.New("refused")}}
	c := New(f)
	type report struct{ groups, writes, failed int }
	var mu sync.Mutex
	var reports []report
	c.OnCommit = func(groups, writes, failed int, d time.Duration) {
		if d < 0 {
			t.Errorf("negative commit duration %v", d)
		}
		mu.Lock()
		reports = append(reports, report{groups, writes, failed})
		mu.Unlock()
	}
	first := c.Submit([]backend.Write{write("r0", "a")})
	<-f.entered // held: the next groups share the second commit
	gs := []*Group{
		c.Submit([]backend.Write{write("r1", "a"), write("r1", "b")}),
		c.Submit([]backend.Write{write("bad", "a")}),
	}
	f.hold <- struct{}{}
	<-f.entered
	f.hold <- struct{}{}
	first.Wait()
	for _, g := range gs {
		g.Wait()
	}
	c.Wait()
	mu.Lock()
	defer mu.Unlock()
	want := []report{{1, 1, 0}, {2, 3, 1}}
	if fmt.Sprint(reports) != fmt.Sprint(want) {
		t.Errorf("OnCommit saw %v, want %v", reports, want)
	}
}
