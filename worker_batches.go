package openworkflow

import (
	"context"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// batchLoop flushes the namespace's batches whose timeout passed
// (backend.BatchStore.FlushDueBatches) until ctx ends: after each flush it
// sleeps until the next open batch is due (by the worker's clock), or one
// MaxPollInterval when none is open or the flush failed, so that a batch
// opened meanwhile is flushed at most one MaxPollInterval after its
// timeout. A worker runs it when it registered a workflow declaring
// Spec.Batch; of workers flushing at once, each batch is flushed by one
// (the backend locks it), so no worker is the leader.
func (w *Worker) batchLoop(ctx context.Context, bs backend.BatchStore) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		n, next, ok, err := bs.FlushDueBatches(ctx, 0)
		delay := w.opts.MaxPollInterval
		switch {
		case err != nil:
			if ctx.Err() == nil {
				w.log.Warn("openworkflow: flushing due batches failed; trying again", "error", err)
			}
		case n > 0:
			w.log.Debug("openworkflow: flushed batches by their timeout", "batches", n)
		}
		if err == nil && ok {
			delay = max(0, min(delay, next.Sub(w.opts.Now())))
		}
		timer.Reset(delay)
	}
}
