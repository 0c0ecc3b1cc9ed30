package goindex

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// Worker settings [Demo] uses where DemoOptions.Worker leaves them zero. The
// lease is short so that a run orphaned by a killed process is claimed
// again within seconds by the next one.
const (
	DemoLeaseDuration       = 3 * time.Second
	DemoHeartbeatInterval   = 1 * time.Second
	DemoShutdownGracePeriod = 5 * time.Second
)

// DemoOptions configure [Demo]. The zero value indexes [DefaultPackages]
// of the local Go installation.
type DemoOptions struct {
	// Root is the directory holding the packages; "" means [SourceRoot].
	Root string
	// Packages are the import paths to index; nil means DefaultPackages.
	Packages []string
	// Batch and Pause are as in [Input] (0 means DefaultBatch /
	// DefaultPause).
	Batch int
	Pause time.Duration
	// Fresh starts a new run of these packages, with an instance key of
	// its own, even if an earlier one is unfinished or completed. It
	// becomes the latest: the one a later Demo without Fresh resumes (if
	// it was interrupted) or shows.
	Fresh bool
	// Out receives status lines ("started run …", "resuming run …") and
	// the workflows' progress lines; nil discards them.
	Out io.Writer
	// Worker configures the in-process worker. Zero LeaseDuration,
	// HeartbeatInterval and ShutdownGracePeriod take DemoLeaseDuration,
	// DemoHeartbeatInterval and DemoShutdownGracePeriod; a nil Logger logs
	// warnings and errors to stderr.
	Worker ow.WorkerOptions
}

// DemoResult is what [Demo] did.
type DemoResult struct {
	// RunID is the parent run's id.
	RunID string `json:"runId"`
	// Resumed is true when the run existed before this call (started by
	// an earlier, possibly killed, process).
	Resumed bool `json:"resumed"`
	// CreatedAt is when the run was created.
	CreatedAt time.Time `json:"createdAt"`
	// Report is the run's output.
	Report Report `json:"report"`
}

// Demo indexes opts.Packages end to end on b with an in-process worker and
// returns the report.
//
// Each demo run has an identity, its instance key: [IdempotencyKey] of the
// source root and the package list for the first run of these packages,
// that key followed by "/" and a random suffix for a run started with
// Fresh. The run is started with the instance key as its idempotency key
// and as the version of both workflows, and the worker claims only runs of
// the workflows it registered, with that version (never ClaimUnregistered): so a
// demo's worker executes its own run and that run's children, never the
// runs another demo (other packages, or another fresh run) left behind.
//
// Without Fresh, Demo carries on with the latest run of these packages
// (the newest run whose idempotency key is the instance key of one of
// them, fresh ones included): an unfinished one is resumed (completed
// steps are not executed again, and runs orphaned by a killed worker are
// claimed again once their short lease, DemoLeaseDuration, expires); a
// completed one's report is returned if it completed within
// [backend.IdempotencyPeriod] (24 h), else a new run starts. So the run a
// killed `Demo` with Fresh left is the one the next Demo resumes. Two
// processes running Demo on the same packages at once share the run,
// each printing the steps it executes. Demo fails if a package directory
// does not exist, if the latest run failed or was canceled, or with ctx's
// error.
func Demo(ctx context.Context, b backend.Backend, opts DemoOptions) (*DemoResult, error) {
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	in, err := demoInput(opts)
	if err != nil {
		return nil, err
	}
	c := ow.NewClient(b)
	key, run, err := demoInstance(ctx, c, IdempotencyKey(in.Root, in.Packages), opts.Fresh)
	if err != nil {
		return nil, err
	}
	version := key
	if run != nil {
		version = ""
		if run.Version != nil {
			version = *run.Version // "" for runs of demos before instance keys
		}
	}
	ix := New(Options{Progress: out, Version: version})
	wopts := demoWorkerOptions(opts.Worker)
	w := ow.NewWorker(b, wopts)
	if err := ix.Register(w); err != nil {
		return nil, err
	}

	res := &DemoResult{Resumed: run != nil}
	h := &ow.Handle[Report]{}
	if run == nil {
		before := time.Now().Add(-time.Second)
		if h, err = ix.Index.Start(ctx, c, in, ow.WithIdempotencyKey(key)); err != nil {
			return nil, err
		}
		if run, err = c.GetRun(ctx, h.ID); err != nil {
			return nil, err
		}
		// Another process may have started the same run a moment before.
		res.Resumed = run.Attempts > 0 || run.Status.Normalize() != backend.RunPending || run.CreatedAt.Before(before)
	} else {
		h.RunHandle = c.Handle(run.ID)
	}
	res.RunID, res.CreatedAt = run.ID, run.CreatedAt
	if err := announce(out, run, res.Resumed, in, wopts); err != nil {
		return nil, err
	}
	if run.Status.Normalize() == backend.RunCompleted {
		res.Report, err = h.Result(ctx)
		return res, err
	}

	if err := w.Start(ctx); err != nil {
		return nil, err
	}
	report, err := h.Result(ctx)
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wopts.ShutdownGracePeriod+5*time.Second)
	defer cancel()
	if serr := w.Stop(stopCtx); err == nil && serr != nil {
		err = serr
	}
	if err != nil {
		return nil, err
	}
	res.Report = report
	return res, nil
}

// demoInstance decides which run Demo works on: with fresh, a new instance
// key (base + "/" + a random suffix) and no run; else the latest run of
// these packages and its key, when there is one to resume or show, or
// base (no run yet) or a new key (the latest completed too long ago).
func demoInstance(ctx context.Context, c *ow.Client, base string, fresh bool) (string, *backend.WorkflowRun, error) {
	if fresh {
		return freshKey(base)
	}
	run, err := latestDemoRun(ctx, c, base)
	switch {
	case err != nil:
		return "", nil, err
	case run == nil:
		return base, nil, nil
	case run.Status.Normalize() == backend.RunCompleted && time.Since(run.CreatedAt) > backend.IdempotencyPeriod:
		return freshKey(base)
	}
	return *run.IdempotencyKey, run, nil
}

// freshKey returns base + "/" + 8 random hexadecimal digits.
func freshKey(base string) (string, *backend.WorkflowRun, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, err
	}
	return base + "/" + hex.EncodeToString(b[:]), nil, nil
}

// latestDemoRun returns the newest goindex run whose idempotency key is
// base or starts with base + "/", nil when there is none.
func latestDemoRun(ctx context.Context, c *ow.Client, base string) (*backend.WorkflowRun, error) {
	p := backend.ListWorkflowRunsParams{WorkflowName: WorkflowName, Limit: backend.DefaultPageSize}
	for {
		page, err := c.ListRuns(ctx, p)
		if err != nil {
			return nil, err
		}
		for i, r := range page.Data {
			if k := r.IdempotencyKey; k != nil && (*k == base || strings.HasPrefix(*k, base+"/")) {
				return &page.Data[i], nil
			}
		}
		if page.Next == nil {
			return nil, nil
		}
		p.After = *page.Next
	}
}

// announce prints what Demo does with run, or fails for a run that failed
// or was canceled.
func announce(out io.Writer, run *backend.WorkflowRun, resumed bool, in Input, wopts ow.WorkerOptions) error {
	created := run.CreatedAt.Local().Format("2006-01-02 15:04:05")
	switch st := run.Status.Normalize(); {
	case st == backend.RunCompleted:
		fmt.Fprintf(out, "run %s for these packages already completed (started at %s); showing its report. Use a fresh run to index again.\n", run.ID, created)
	case st.Terminal():
		return fmt.Errorf("run %s for these packages (started at %s) is %s; start a fresh run to index again", run.ID, created, st)
	case resumed:
		fmt.Fprintf(out, "resuming run %s started at %s: recorded steps are not run again; runs a killed process held are taken over when its %s lease expires\n",
			run.ID, created, wopts.LeaseDuration)
	default:
		fmt.Fprintf(out, "started run %s: indexing %s under %s, %d at a time\n", run.ID, count(len(in.Packages), "package"), in.Root, in.Batch)
	}
	return nil
}

func demoInput(opts DemoOptions) (Input, error) {
	in := Input{Root: opts.Root, Packages: opts.Packages, Batch: opts.Batch, Pause: opts.Pause}
	if in.Root == "" {
		root, err := SourceRoot()
		if err != nil {
			return in, err
		}
		in.Root = root
	}
	if len(in.Packages) == 0 {
		in.Packages = DefaultPackages
	}
	if in.Batch <= 0 {
		in.Batch = DefaultBatch
	}
	if in.Pause == 0 {
		in.Pause = DefaultPause
	}
	return in, CheckPackages(in.Root, in.Packages)
}

// CheckPackages returns an error naming the first package of pkgs that has
// no directory under root.
func CheckPackages(root string, pkgs []string) error {
	for _, p := range pkgs {
		dir := filepath.Join(root, filepath.FromSlash(p))
		if st, err := os.Stat(dir); p == "" || err != nil || !st.IsDir() {
			return fmt.Errorf("package %q: no directory %s: name a package of the standard library, such as %q", p, dir, DefaultPackages[0])
		}
	}
	return nil
}

// demoWorkerOptions applies the demo's defaults to o, and never
// ClaimUnregistered: a demo's worker executes only its own runs.
func demoWorkerOptions(o ow.WorkerOptions) ow.WorkerOptions {
	o.ClaimUnregistered = false
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = DemoLeaseDuration
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = DemoHeartbeatInterval
	}
	if o.ShutdownGracePeriod <= 0 {
		o.ShutdownGracePeriod = DemoShutdownGracePeriod
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return o
}

// IdempotencyKey is the instance key of the first [Demo] run of these
// packages: "goindex:" and a hash of the source root and the package list
// (in order), so the same invocation finds the same run. Fresh runs add
// "/" and a random suffix to it.
func IdempotencyKey(root string, packages []string) string {
	sum := sha256.Sum256([]byte(root + "\x00" + strings.Join(packages, ",")))
	return "goindex:" + hex.EncodeToString(sum[:8])
}

// SourceRoot returns the standard library's source directory,
// $(go env GOROOT)/src: $GOROOT when set, else what `go env GOROOT`
// prints. It fails when neither names a directory with a src folder.
func SourceRoot() (string, error) {
	root := os.Getenv("GOROOT")
	if root == "" {
		b, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			return "", fmt.Errorf("find the Go installation: `go env GOROOT` failed (%v): put go on PATH or set GOROOT", err)
		}
		root = strings.TrimSpace(string(b))
	}
	src := filepath.Join(root, "src")
	if st, err := os.Stat(src); err != nil || !st.IsDir() {
		return "", errors.New("find the Go installation: no directory " + src + ": set GOROOT to a Go installation")
	}
	return src, nil
}
