package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
)

// deliverEvent hands the new event ev to the consumers of events other
// than triggers and cancelOn, inside the publish's transaction tx, after
// the triggers and cancelOn declarations on its name have acted: the runs
// waiting for it (ow.WaitForEvent) are delivered it here. Each consumer
// evaluates its conditions with m (backend.MatchEvent) and records what
// it did with log.add (backend.EffectWoke for a woken run; a condition
// that failed to evaluate as backend.EffectError). An error rolls the
// whole publish back. This is the seam the event-wait feature fills.
func (b *Backend) deliverEvent(ctx context.Context, tx pgx.Tx, ev *backend.EventRecord, m backend.EventMatcher, log *effectLog) error {
	return b.deliverEventToWaits(ctx, tx, ev, m, log)
}
