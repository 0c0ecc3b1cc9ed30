package sqlite

import (
	"context"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// deliverEvent hands the new event ev to the consumers of events other
// than triggers and cancelOn, inside the publish's BEGIN IMMEDIATE
// transaction tx (its time now; wake-ups go to evs, published after the
// commit), after the triggers and cancelOn declarations on its name have
// acted: the runs waiting for it (ow.WaitForEvent) are delivered it here.
// Each consumer evaluates its conditions with m (backend.MatchEvent) and
// records what it did with log.add (backend.EffectWoke for a woken run; a
// condition that failed to evaluate as backend.EffectError). An error
// rolls the whole publish back. This is the seam the event-wait feature
// fills.
func (b *Backend) deliverEvent(ctx context.Context, tx *txn, now time.Time, evs *events, ev *backend.EventRecord, m backend.EventMatcher, log *effectLog) error {
	return b.deliverEventToWaits(ctx, tx, now, evs, ev, m, log)
}

// RecentFinish implements [backend.FinishRecorder]: the runs of the
// namespace that a backend on this file in this process published as
// finished, the last 1,024 of them.
func (b *Backend) RecentFinish(workflowRunID string) (backend.Event, bool) {
	return b.file.hub(b.ns).RecentFinish(workflowRunID)
}
