package dashboard

import (
	"context"
	"net/http"
	"net/url"

	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
)

// The debounce and batches page shows what waits to become runs: the
// pending debounced runs (GET /v1/debounced-runs: key, due time, the
// burst's deadline) and the open batches (GET /v1/batches: workflow, key,
// items, bytes, first item, flush time); and the per-key queues of fair
// shares (GET /v1/fair-queues: weight, queued and running runs, next and
// last pass, oldest wait, and the namespace's virtual time). A backend
// without one of these capabilities (501) shows that part as unavailable.

// flowControlData is the debounce and batches page.
type flowControlData struct {
	Debounced []api.DebouncedRun
	Batches   []backend.OpenBatch
	// NoDebounce and NoBatches: the backend keeps none (501).
	NoDebounce, NoBatches bool
	// DebouncedMore and BatchesMore: more exist than the page shows.
	DebouncedMore, BatchesMore bool
	// Fair is the first page of the per-key queues of fair shares (nil
	// with NoFair: the backend keeps none).
	Fair   *api.FairQueueList
	NoFair bool
}

// flowControlLimit is how many of each the page shows.
const flowControlLimit = 500

func (d *Dashboard) flowControlPage(w http.ResponseWriter, r *http.Request) {
	data, err := d.loadFlowControl(r.Context())
	if err != nil {
		d.failAPI(w, r, "The debounced runs and open batches could not be listed", err)
		return
	}
	d.render(w, r, http.StatusOK, "flowcontrol", d.view(r, "Debounce and batches", "flowcontrol", data))
}

func (d *Dashboard) loadFlowControl(ctx context.Context) (*flowControlData, error) {
	data := &flowControlData{}
	q := url.Values{"limit": {"500"}}
	var deb api.List[api.DebouncedRun]
	switch err := d.api.get(ctx, "/v1/debounced-runs", q, &deb); {
	case err != nil && apiCode(err) == api.CodeNotSupported:
		data.NoDebounce = true
	case err != nil:
		return nil, err
	}
	var batches api.List[backend.OpenBatch]
	switch err := d.api.get(ctx, "/v1/batches", q, &batches); {
	case err != nil && apiCode(err) == api.CodeNotSupported:
		data.NoBatches = true
	case err != nil:
		return nil, err
	}
	var fair api.FairQueueList
	switch err := d.api.get(ctx, "/v1/fair-queues", q, &fair); {
	case err != nil && apiCode(err) == api.CodeNotSupported:
		data.NoFair = true
	case err != nil:
		return nil, err
	default:
		data.Fair = &fair
	}
	data.Debounced, data.Batches = deb.Data, batches.Data
	data.DebouncedMore, data.BatchesMore = len(deb.Data) >= flowControlLimit, len(batches.Data) >= flowControlLimit
	return data, nil
}
