// Package goindex is a durable workflow that indexes Go source code: for
// each package under $(go env GOROOT)/src it counts the lines, functions,
// types and vars/consts of every non-test .go file, then reports totals
// and the largest files.
//
// It shows the SDK on real input present on any machine with Go:
//
//   - the parent workflow "goindex" starts one child workflow per package
//     ([ow.GoWorkflow]), Batch at a time, with a durable [ow.Sleep] between
//     batches, then aggregates in a final "report" step;
//   - the child workflow "goindex-package" lists the package's files in a
//     step, then parses each in its own [ow.Run] step.
//
// Progress lines are printed from inside step functions, which run only
// when a step actually executes: a replay (after a sleep, a child's
// completion or a crash) prints nothing twice. [Demo] drives a whole run
// and resumes the same run after a crash.
package goindex

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
)

// Workflow names, as stored in workflow_runs.workflow_name.
const (
	WorkflowName        = "goindex"
	PackageWorkflowName = "goindex-package"
)

// Defaults of [Input] fields left zero.
const (
	// DefaultBatch is the number of package child runs started at once.
	DefaultBatch = 2
	// DefaultPause is the durable sleep between two batches.
	DefaultPause = 2 * time.Second
)

// DefaultPackages are indexed when no package is given: a handful of
// standard-library packages of various sizes.
var DefaultPackages = []string{"strings", "bufio", "encoding/json", "net/url", "container/list"}

// Input is the parent workflow's input.
type Input struct {
	// Root is the directory holding the packages, normally
	// $(go env GOROOT)/src (see [SourceRoot]); required.
	Root string `json:"root"`
	// Packages are import paths relative to Root ("encoding/json");
	// required.
	Packages []string `json:"packages"`
	// Batch is the number of packages indexed at once; 0 means
	// [DefaultBatch].
	Batch int `json:"batch,omitempty"`
	// Pause is the durable sleep between batches (JSON: nanoseconds); 0
	// means [DefaultPause], a negative value no pause.
	Pause time.Duration `json:"pause,omitempty"`
}

// PackageInput is the child workflow's input.
type PackageInput struct {
	// Root is as in [Input].
	Root string `json:"root"`
	// Package is the import path to index, relative to Root.
	Package string `json:"package"`
}

// Options configure [New].
type Options struct {
	// Progress receives one line per executed step (files listed, file
	// indexed, batch started, report built); nil discards them. Writes
	// are serialized.
	Progress io.Writer
	// Version is the version of both workflows ([ow.Spec.Version]); ""
	// means unversioned. [Demo] sets a version per demo run so that its
	// worker executes only that run and its children.
	Version string
}

// Indexer holds the two workflow definitions, bound to a progress writer.
type Indexer struct {
	// Index is the parent workflow: it indexes Input.Packages and returns
	// the report.
	Index *ow.Workflow[Input, Report]
	// Package is the child workflow: it indexes one package.
	Package *ow.Workflow[PackageInput, PackageStats]

	mu  sync.Mutex
	out io.Writer
}

// New returns the goindex workflows. Register them on a worker with
// [Indexer.Register].
func New(opts Options) *Indexer {
	ix := &Indexer{out: opts.Progress}
	if ix.out == nil {
		ix.out = io.Discard
	}
	ix.Package = ow.Define(ow.Spec{Name: PackageWorkflowName, Version: opts.Version}, ix.indexPackage)
	ix.Index = ow.Define(ow.Spec{Name: WorkflowName, Version: opts.Version}, ix.indexAll)
	return ix
}

// Register registers both workflows on w.
func (ix *Indexer) Register(w *ow.Worker) error {
	return w.Register(ix.Index, ix.Package)
}

// count formats n and a regular English noun: "1 package", "2 packages".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// printf writes one progress line.
func (ix *Indexer) printf(format string, args ...any) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	fmt.Fprintf(ix.out, format+"\n", args...)
}

// indexPackage is the child workflow: a "list-files" step, then one
// "index <file>" step per file.
func (ix *Indexer) indexPackage(ctx ow.Context, in PackageInput) (PackageStats, error) {
	dir := filepath.Join(in.Root, filepath.FromSlash(in.Package))
	files, err := ow.Run(ctx, "list-files", func(context.Context) ([]string, error) {
		names, err := ListGoFiles(dir)
		if err != nil {
			return nil, ow.NonRetryable(fmt.Errorf("list package %s: %w", in.Package, err))
		}
		ix.printf("  %-16s %s", in.Package, count(len(names), "file"))
		return names, nil
	})
	if err != nil {
		return PackageStats{}, err
	}
	ps := PackageStats{Package: in.Package, Files: []FileStats{}}
	for _, name := range files {
		st, err := ow.Run(ctx, "index "+name, func(context.Context) (FileStats, error) {
			st, err := IndexFile(in.Package, filepath.Join(dir, name))
			if err != nil {
				return FileStats{}, ow.NonRetryable(err)
			}
			ix.printf("  indexed %-32s %5d lines %4d funcs %3d types %4d vars/consts",
				in.Package+"/"+name, st.Lines, st.Funcs, st.Types, st.Values)
			return st, nil
		})
		if err != nil {
			return PackageStats{}, err
		}
		ps.Files = append(ps.Files, st)
		ps.Totals.Add(st)
	}
	return ps, nil
}

// indexAll is the parent workflow: batches of child runs separated by
// durable sleeps, then the "report" step.
func (ix *Indexer) indexAll(ctx ow.Context, in Input) (Report, error) {
	batch := in.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	pause := in.Pause
	if pause == 0 {
		pause = DefaultPause
	}
	var results []PackageStats
	for start, n := 0, 1; start < len(in.Packages); start, n = start+batch, n+1 {
		pkgs := in.Packages[start:min(start+batch, len(in.Packages))]
		if start > 0 && pause > 0 {
			if err := ow.Sleep(ctx, "pause", pause); err != nil {
				return Report{}, err
			}
		}
		_, err := ow.Run(ctx, "start-batch", func(context.Context) (int, error) {
			ix.printf("batch %d: %v", n, pkgs)
			return n, nil
		})
		if err != nil {
			return Report{}, err
		}
		futures := make([]*ow.Future[PackageStats], len(pkgs))
		for i, p := range pkgs {
			futures[i] = ow.GoWorkflow(ctx, ix.Package, PackageInput{Root: in.Root, Package: p}, ow.WithStepName("package "+p))
		}
		for _, f := range futures {
			ps, err := f.Get()
			if err != nil {
				return Report{}, err // ErrSuspended while children run
			}
			results = append(results, ps)
		}
		if start+batch < len(in.Packages) && pause > 0 {
			_, err := ow.Run(ctx, "announce-pause", func(context.Context) (bool, error) {
				ix.printf("batch %d done; durable sleep %s before the next", n, pause)
				return true, nil
			})
			if err != nil {
				return Report{}, err
			}
		}
	}
	return ow.Run(ctx, "report", func(context.Context) (Report, error) {
		r := BuildReport(results)
		ix.printf("report: %s, %s, %s", count(len(r.Packages), "package"), count(r.Totals.Files, "file"), count(r.Totals.Lines, "line"))
		return r, nil
	})
}
