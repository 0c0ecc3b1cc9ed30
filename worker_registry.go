package openworkflow

import (
	"context"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// SDKName is the SDK name a worker writes to the registry of workers
// (backend.WorkerRecord.SDK).
const SDKName = "openworkflow-go"

// modulePath is this SDK's Go module path, looked up in the build
// information for its version.
const modulePath = "github.com/openworkflow-go/openworkflow"

// defaultRegistryInterval is WorkerOptions.RegistryInterval's default.
const defaultRegistryInterval = 10 * time.Second

// registryPutTimeout bounds one write of the worker's registry record.
const registryPutTimeout = 5 * time.Second

var sdkVersion = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return moduleVersion(bi)
})

// moduleVersion is this module's version in bi: the dependency's version
// (with its replacement's, if replaced), or the main module's when this is
// the main module and built from a tagged module; "devel" otherwise.
func moduleVersion(bi *debug.BuildInfo) string {
	m := &bi.Main
	if bi.Main.Path != modulePath {
		i := slices.IndexFunc(bi.Deps, func(d *debug.Module) bool { return d.Path == modulePath })
		if i < 0 {
			return "devel"
		}
		m = bi.Deps[i]
		if m.Replace != nil {
			m = m.Replace
		}
	}
	if m.Version == "" || m.Version == "(devel)" {
		return "devel"
	}
	return m.Version
}

// SDKVersion returns this SDK's module version as the running binary's
// build information records it (e.g. "v0.3.1", or a pseudo-version), or
// "devel" when it was built from a checkout of this module itself or
// without module information. Workers write it to the registry.
func SDKVersion() string { return sdkVersion() }

// registered lists the workflows registered on the worker, for its
// registry record.
func (r *registry) registered() []backend.RegisteredWorkflow {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]backend.RegisteredWorkflow, 0, len(r.defs))
	for _, d := range r.defs {
		s := d.Spec()
		out = append(out, backend.RegisteredWorkflow{Name: s.Name, Version: s.Version, InputExample: s.InputExample})
	}
	slices.SortFunc(out, func(a, b backend.RegisteredWorkflow) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Version, b.Version)
	})
	return out
}

// workerRegistry returns the backend's registry of workers, or nil when
// it has none or the worker writes none (RegistryInterval negative).
func (w *Worker) workerRegistry() backend.WorkerRegistry {
	wr, ok := w.b.(backend.WorkerRegistry)
	if !ok || w.opts.RegistryInterval <= 0 {
		return nil
	}
	return wr
}

// record is the worker's registry record in state.
func (w *Worker) record(state backend.WorkerState) backend.WorkerRecord {
	host, _ := os.Hostname()
	w.mu.Lock()
	inUse := w.opts.Concurrency - len(w.free)
	started := w.startedAt
	w.mu.Unlock()
	return backend.WorkerRecord{
		ID: w.opts.ID, Host: host, PID: os.Getpid(), SDK: SDKName, SDKVersion: SDKVersion(),
		State: state, Concurrency: w.opts.Concurrency, InUse: max(0, min(inUse, w.opts.Concurrency)),
		HeartbeatInterval: w.opts.RegistryInterval, StartedAt: started, Workflows: w.reg.registered(),
	}
}

// putRecord writes the worker's record in state, bounded by
// registryPutTimeout; a failure is logged, never returned: the registry
// is advisory, and a worker that cannot write it still executes runs.
func (w *Worker) putRecord(ctx context.Context, state backend.WorkerState) {
	wr := w.workerRegistry()
	if wr == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), registryPutTimeout)
	defer cancel()
	if err := wr.PutWorker(ctx, w.record(state)); err != nil {
		w.log.Warn("openworkflow: could not write the worker's record to the registry of workers", "state", state, "error", err)
	}
}

// registryLoop heartbeats the worker's record every RegistryInterval (in
// real time) until ctx ends: one small upsert per interval, on no claim
// or step path. The loop of the worker owns it.
func (w *Worker) registryLoop(ctx context.Context) {
	t := time.NewTicker(w.opts.RegistryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.putRecord(ctx, backend.WorkerRunning)
		}
	}
}
