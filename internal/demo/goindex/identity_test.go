package goindex

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
)

// cancelAt is a progress writer that cancels its context once a line
// matching re has been written, as a kill at that point would stop the
// process, and keeps what was written.
type cancelAt struct {
	syncBuffer
	re     *regexp.Regexp
	cancel context.CancelFunc
	once   sync.Once
}

func (w *cancelAt) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	if w.re.Match(p) {
		w.once.Do(w.cancel)
	}
	return n, err
}

// interruptedDemo runs Demo and stops it as soon as it has said which run
// it started, before its worker starts: the run is left pending, as a
// process killed at that point leaves it. It returns the run's id.
func interruptedDemo(t *testing.T, b backend.Backend, opts DemoOptions) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := &cancelAt{re: regexp.MustCompile(`started run`), cancel: cancel}
	opts.Out = w
	if _, err := Demo(ctx, b, opts); err == nil {
		t.Fatalf("the interrupted demo completed:\n%s", w.String())
	}
	m := regexp.MustCompile(`started run (wrun_\w+)`).FindStringSubmatch(w.String())
	if m == nil {
		t.Fatalf("the interrupted demo started no run:\n%s", w.String())
	}
	return m[1]
}

func openDemoDB(t *testing.T) backend.Backend {
	t.Helper()
	b, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ow.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestAnInterruptedFreshRunIsTheOneTheNextDemoResumes(t *testing.T) {
	t.Parallel()
	root, err := SourceRoot()
	if err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := openDemoDB(t)
	pkgs := []string{"container/list", "errors"}
	opts := DemoOptions{Root: root, Packages: pkgs, Pause: 10 * time.Millisecond}

	first, err := Demo(ctx, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	fresh := opts
	fresh.Fresh = true
	freshID := interruptedDemo(t, b, fresh)
	if freshID == first.RunID {
		t.Fatalf("--fresh reused run %s", freshID)
	}

	var out syncBuffer
	opts.Out = &out
	res, err := Demo(ctx, b, opts)
	if err != nil {
		t.Fatalf("Demo: %v\n%s", err, out.String())
	}
	if res.RunID != freshID || !res.Resumed {
		t.Fatalf("the next demo finished run %s (resumed %v); want the interrupted fresh run %s, not the older %s\n%s",
			res.RunID, res.Resumed, freshID, first.RunID, out.String())
	}
	mustHave(t, out.String(), "resuming run "+freshID)
	if want := independentTotals(t, root, pkgs); res.Report.Totals != want {
		t.Errorf("totals %+v, want %+v", res.Report.Totals, want)
	}

	// From now on the fresh run is the one shown.
	again, err := Demo(ctx, b, opts)
	if err != nil || again.RunID != freshID {
		t.Errorf("a later demo shows run %v (%v); want the latest, %s", again, err, freshID)
	}
}

func TestADemoNeverExecutesAnotherDemosRuns(t *testing.T) {
	t.Parallel()
	root, err := SourceRoot()
	if err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := openDemoDB(t)
	orphanPkgs := []string{"unicode/utf8", "container/ring"}
	for _, fresh := range []bool{false, true} {
		orphan := interruptedDemo(t, b, DemoOptions{Root: root, Packages: orphanPkgs, Pause: 10 * time.Millisecond, Fresh: fresh})

		var out syncBuffer
		res, err := Demo(ctx, b, DemoOptions{Root: root, Packages: []string{"container/list"}, Pause: 10 * time.Millisecond, Out: &out, Fresh: fresh})
		if err != nil {
			t.Fatalf("Demo: %v\n%s", err, out.String())
		}
		if res.RunID == orphan {
			t.Fatalf("the demo of other packages finished the orphan %s", orphan)
		}
		for _, p := range orphanPkgs {
			if strings.Contains(out.String(), p) {
				t.Errorf("fresh=%v: the demo of container/list printed the orphaned demo's package %s:\n%s", fresh, p, out.String())
			}
		}
		run, err := b.GetWorkflowRun(ctx, orphan)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != backend.RunPending || run.Attempts != 0 {
			t.Errorf("fresh=%v: another demo claimed the orphan: status %s, %d attempts", fresh, run.Status, run.Attempts)
		}
	}
}

func mustHave(t *testing.T, out, sub string) {
	t.Helper()
	if !strings.Contains(out, sub) {
		t.Errorf("output does not contain %q:\n%s", sub, out)
	}
}
