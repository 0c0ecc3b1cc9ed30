package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openworkflow-go/openworkflow/api"
)

// The workers view joins two sources. The registry of workers (GET
// /v1/workers, go migration 17): every Go worker writes its record at
// start, every RegistryInterval and at stop, so idle workers are listed,
// with their state (gone after 3 missed heartbeats), slots and
// registered workflows. And the running runs: a run's worker id is a slot
// id, "<worker id>/<slot>" from this SDK; a heartbeat renews the lease
// (available_at) and sets updated_at, so a run's updated_at is its
// worker's last sign of life for it. TypeScript workers write no record
// and are seen only through the runs they hold.

// workersData is the workers page.
type workersData struct {
	Workers []workerView
	// Parked counts the running runs that hold no worker (waiting).
	Parked int
	// Truncated: more running runs exist than the page read.
	Truncated bool
	Read      int
	// Limits are the workflows' stored limits (none when the backend
	// keeps none).
	Limits []limitView
	// Registry: the backend keeps a registry of workers (GET /v1/workers
	// answered).
	Registry bool
}

// limitView is a workflow's stored limits in words, and the different
// limits the last declaration replaced (Replaced "" when none): two
// deployments declaring different limits replace each other's at every
// start, which this makes visible.
type limitView struct {
	Workflow, Limits, DeclaredBy string
	UpdatedAt                    time.Time
	Replaced, ReplacedBy         string
	ReplacedAt                   time.Time
}

// limitsText is l in words: "concurrency 2, per key 1, 5 per 1s".
func limitsText(l api.LimitValues) string {
	var parts []string
	if l.Concurrency != nil {
		parts = append(parts, "concurrency "+strconv.Itoa(*l.Concurrency))
	}
	if l.ConcurrencyPerKey != nil {
		parts = append(parts, "per key "+strconv.Itoa(*l.ConcurrencyPerKey))
	}
	if l.RateLimit != nil && l.RatePeriodMs != nil {
		parts = append(parts, strconv.Itoa(*l.RateLimit)+" per "+(time.Duration(*l.RatePeriodMs)*time.Millisecond).String())
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// loadLimits reads the stored limits; a backend that keeps none (501)
// has none to show.
func (d *Dashboard) loadLimits(ctx context.Context) ([]limitView, error) {
	var page api.List[api.WorkflowLimits]
	if err := d.api.get(ctx, "/v1/limits", nil, &page); err != nil {
		if apiCode(err) == api.CodeNotSupported {
			return nil, nil
		}
		return nil, err
	}
	text := func(s *string) string {
		if s == nil {
			return "-"
		}
		return *s
	}
	var out []limitView
	for _, l := range page.Data {
		v := limitView{Workflow: l.WorkflowName, Limits: limitsText(l.LimitValues), DeclaredBy: text(l.DeclaredBy), UpdatedAt: l.UpdatedAt}
		if r := l.Replaced; r != nil {
			v.Replaced, v.ReplacedBy, v.ReplacedAt = limitsText(r.LimitValues), text(r.DeclaredBy), r.At
		}
		out = append(out, v)
	}
	return out, nil
}

type workerView struct {
	ID string
	// Record is the worker's record in the registry; nil for a worker
	// seen only through its runs (a TypeScript worker, or a backend
	// without a registry).
	Record *api.Worker
	Runs   []heldRun
	// LastSeen is the latest updated_at of its runs; LeaseUntil the latest
	// lease expiry.
	LastSeen, LeaseUntil time.Time
	// Expired: every lease it holds has expired (the worker is gone or
	// stuck).
	Expired bool
	// InUse and Free are the slots in use and free: the record's, or more
	// in use when the worker holds more unexpired leases than its last
	// heartbeat counted (it claimed since).
	InUse, Free int
}

// Down reports a worker that claims nothing: stopped or gone by its
// record, or, without one, holding only expired leases.
func (v workerView) Down() bool {
	if v.Record != nil {
		return v.Record.State == "stopped" || v.Record.State == "gone"
	}
	return v.Expired
}

type heldRun struct {
	Run     api.Run
	Slot    string
	Expired bool
}

// maxWorkerRuns bounds the running runs the page reads (ten pages of the
// API's largest).
const maxWorkerRuns = 10000

func (d *Dashboard) workersPage(w http.ResponseWriter, r *http.Request) {
	data, err := d.loadWorkers(r.Context(), time.Now())
	if err != nil {
		d.failAPI(w, r, "The running runs could not be listed", err)
		return
	}
	if data.Limits, err = d.loadLimits(r.Context()); err != nil {
		d.failAPI(w, r, "The workflows' limits could not be listed", err)
		return
	}
	d.render(w, r, http.StatusOK, "workers", d.view(r, "Workers", "workers", data))
}

func (d *Dashboard) loadWorkers(ctx context.Context, now time.Time) (*workersData, error) {
	data := &workersData{}
	byID := map[string]*workerView{}
	cursor := ""
	for {
		q := url.Values{"status": {"running"}, "limit": {"1000"}, "resolveData": {"none"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page api.RunPage
		if err := d.api.get(ctx, "/v1/runs", q, &page); err != nil {
			return nil, err
		}
		for _, run := range page.Data {
			data.Read++
			if run.WorkerID == nil {
				data.Parked++
				continue
			}
			id, slot := splitSlot(*run.WorkerID)
			wv := byID[id]
			if wv == nil {
				wv = &workerView{ID: id, Expired: true}
				byID[id] = wv
			}
			held := heldRun{Run: run, Slot: slot, Expired: run.AvailableAt != nil && run.AvailableAt.Before(now)}
			wv.Runs = append(wv.Runs, held)
			wv.Expired = wv.Expired && held.Expired
			if run.UpdatedAt.After(wv.LastSeen) {
				wv.LastSeen = run.UpdatedAt
			}
			if run.AvailableAt != nil && run.AvailableAt.After(wv.LeaseUntil) {
				wv.LeaseUntil = *run.AvailableAt
			}
		}
		if page.Cursor == nil {
			break
		}
		if data.Read >= maxWorkerRuns {
			data.Truncated = true
			break
		}
		cursor = *page.Cursor
	}
	var reg api.List[api.Worker]
	switch err := d.api.get(ctx, "/v1/workers", nil, &reg); {
	case err == nil:
		data.Registry = true
	case apiCode(err) != api.CodeNotSupported:
		return nil, err
	}
	for i := range reg.Data {
		rec := &reg.Data[i]
		wv := byID[rec.ID]
		if wv == nil {
			wv = &workerView{ID: rec.ID}
			byID[rec.ID] = wv
		}
		wv.Record = rec
		held := 0
		for _, hr := range wv.Runs {
			if !hr.Expired {
				held++
			}
		}
		wv.InUse = min(max(rec.InUse, held), rec.Concurrency)
		wv.Free = rec.Concurrency - wv.InUse
	}
	for _, wv := range byID {
		data.Workers = append(data.Workers, *wv)
	}
	// Workers claiming runs first, then by id.
	slices.SortFunc(data.Workers, func(a, b workerView) int {
		if a.Down() != b.Down() {
			if a.Down() {
				return 1
			}
			return -1
		}
		return strings.Compare(a.ID, b.ID)
	})
	return data, nil
}

// splitSlot splits a slot id "<worker>/<n>" into the worker and the
// slot; an id of another shape (another SDK's) is a worker of its own.
func splitSlot(id string) (string, string) {
	i := strings.LastIndexByte(id, '/')
	if i <= 0 {
		return id, ""
	}
	if _, err := strconv.Atoi(id[i+1:]); err != nil {
		return id, ""
	}
	return id[:i], id[i+1:]
}
