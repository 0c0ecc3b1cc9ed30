package goindex

import (
	"context"
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
	// Fresh starts a new run even if one with the same packages was
	// started in the last 24 hours (by default that run is resumed, or
	// its report shown if it completed).
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
// returns the report. The run is started with an idempotency key derived
// from the source root and the package list ([IdempotencyKey]), so calling
// Demo again after the process was killed resumes the same run rather
// than starting over: completed steps are not executed again, and runs
// orphaned by the killed worker are claimed again once their short lease
// (DemoLeaseDuration) expires. A run that already completed is not run
// again; its report is returned (Fresh forces a new run). It fails if a
// package directory does not exist, if the keyed run failed or was
// canceled, or with ctx's error.
func Demo(ctx context.Context, b backend.Backend, opts DemoOptions) (*DemoResult, error) {
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	in, err := demoInput(opts)
	if err != nil {
		return nil, err
	}
	ix := New(Options{Progress: out})
	wopts := demoWorkerOptions(opts.Worker)
	w := ow.NewWorker(b, wopts)
	if err := ix.Register(w); err != nil {
		return nil, err
	}
	c := ow.NewClient(b)

	var startOpts []ow.StartOption
	if !opts.Fresh {
		startOpts = append(startOpts, ow.WithIdempotencyKey(IdempotencyKey(in.Root, in.Packages)))
	}
	before := time.Now().Add(-time.Second)
	h, err := ix.Index.Start(ctx, c, in, startOpts...)
	if err != nil {
		return nil, err
	}
	run, err := c.GetRun(ctx, h.ID)
	if err != nil {
		return nil, err
	}
	res := &DemoResult{RunID: run.ID, CreatedAt: run.CreatedAt}
	res.Resumed = run.Attempts > 0 || run.Status.Normalize() != backend.RunPending || run.CreatedAt.Before(before)
	created := run.CreatedAt.Local().Format("2006-01-02 15:04:05")
	switch st := run.Status.Normalize(); {
	case st == backend.RunCompleted:
		fmt.Fprintf(out, "run %s for these packages already completed (started at %s); showing its report. Use a fresh run to index again.\n", run.ID, created)
	case st.Terminal():
		return nil, fmt.Errorf("run %s for these packages (started at %s) is %s; start a fresh run to index again", run.ID, created, st)
	case res.Resumed:
		fmt.Fprintf(out, "resuming run %s started at %s: recorded steps are not run again; runs a killed process held are taken over when its %s lease expires\n",
			run.ID, created, wopts.LeaseDuration)
	default:
		fmt.Fprintf(out, "started run %s: indexing %d packages under %s, %d at a time\n", run.ID, len(in.Packages), in.Root, in.Batch)
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

func demoWorkerOptions(o ow.WorkerOptions) ow.WorkerOptions {
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

// IdempotencyKey is the key [Demo] starts its run with: "goindex:" and a
// hash of the source root and the package list (in order), so the same
// invocation finds the same run for 24 hours.
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
