package openworkflow

import (
	"context"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// RegisterSchedules declares schedules to put when the worker starts
// ([Worker.Start] puts each, as [Client.PutSchedule] does), so that a
// program declares its schedules beside the workflows they start and a
// redeploy puts them again, changing nothing. Each spec is checked at
// once: a bad field gives a *backend.ScheduleFieldError naming it, and a
// name declared twice an error; nothing is registered then. The workflow
// need not be registered on this worker.
func (w *Worker) RegisterSchedules(specs ...ScheduleSpec) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := make(map[string]bool, len(w.schedules)+len(specs))
	for _, p := range w.schedules {
		seen[p.Name] = true
	}
	var ps []backend.PutScheduleParams
	for _, spec := range specs {
		p, err := spec.params()
		if err != nil {
			return fmt.Errorf("register schedule: %w", err)
		}
		if seen[p.Name] {
			return fmt.Errorf("register schedule %q: declared twice", p.Name)
		}
		seen[p.Name] = true
		ps = append(ps, p)
	}
	w.schedules = append(w.schedules, ps...)
	return nil
}

// putSchedules puts the registered schedules (see RegisterSchedules).
func (w *Worker) putSchedules(ctx context.Context) error {
	if len(w.schedules) == 0 {
		return nil
	}
	ss, ok := w.b.(backend.ScheduleStore)
	if !ok {
		return fmt.Errorf("openworkflow: %d schedules registered, but the backend (%T) has none: %w", len(w.schedules), w.b, backend.ErrNotSupported)
	}
	for _, p := range w.schedules {
		if _, err := ss.PutSchedule(ctx, p); err != nil {
			return fmt.Errorf("openworkflow: put schedule %q: %w", p.Name, err)
		}
	}
	return nil
}

// scheduleCheckEvery is how many MaxPollIntervals an idle worker lets
// pass between two looks at the schedules when no tick is near (5 s by
// default): new or changed schedules also announce themselves
// (EventScheduleChanged), so the look is the fallback for a missed event.
const scheduleCheckEvery = 5

// scheduleLoop fires the namespace's due schedule ticks until ctx ends: it
// asks the backend to fire what is due, then sleeps until the next tick
// (by the worker's clock), a schedule change, or the fallback look, at
// most scheduleCheckEvery MaxPollIntervals; while a buffered tick waits
// for a run to finish, at most one MaxPollInterval. Every worker runs it:
// of those that wake for a tick, one starts its run (the backend's claim),
// so no worker is the leader and any may stop.
func (w *Worker) scheduleLoop(ctx context.Context, ss backend.ScheduleStore) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-w.scheduleWake:
		}
		r, err := ss.FireDueSchedules(ctx, backend.FireDueSchedulesParams{})
		if err != nil && ctx.Err() == nil {
			w.log.Warn("openworkflow: firing due schedules failed; trying again", "error", err)
		}
		w.logFirings(r)
		timer.Stop()
		timer.Reset(w.scheduleDelay(r, err))
	}
}

// scheduleDelay is how long scheduleLoop sleeps after a fire that
// reported r (nil, or partial, after err).
func (w *Worker) scheduleDelay(r *backend.FireReport, err error) time.Duration {
	switch {
	case err != nil || r == nil:
		return w.opts.MaxPollInterval
	case r.More:
		return 0
	}
	d := scheduleCheckEvery * w.opts.MaxPollInterval
	if r.Buffered {
		d = w.opts.MaxPollInterval
	}
	if r.NextFireAt != nil {
		d = max(0, min(d, r.NextFireAt.Sub(w.opts.Now())))
	}
	return d
}

// logFirings logs what a fire did: a schedule whose fire failed as an
// error (and in the metrics), missed ticks as a warning (the workers were
// down longer than the catch-up window), skipped ticks as information,
// started runs at debug level.
func (w *Worker) logFirings(r *backend.FireReport) {
	if r == nil {
		return
	}
	for _, f := range r.Failures {
		w.log.Error("openworkflow: a schedule failed to start its run; its ticks wait and the other schedules go on. "+
			"Fix the field the error names with PutSchedule or `ow schedules put`, or delete the schedule; `ow schedules get` shows its last error",
			"schedule", f.Schedule, "error", f.Err, "failures", f.Failures, "retryAt", f.RetryAt)
		w.m.ObserveScheduleFailure(f.Schedule)
	}
	for _, f := range r.Firings {
		if f.Missed > 0 {
			w.log.Warn("openworkflow: schedule ticks older than the catch-up window were skipped (were the workers down?)",
				"schedule", f.Schedule, "missed", f.Missed)
		}
		for _, t := range f.Ticks {
			switch t.Outcome {
			case backend.TickStarted:
				w.log.Debug("openworkflow: schedule tick started a run", "schedule", f.Schedule, "scheduledAt", t.ScheduledAt, "run", t.RunID)
			default:
				w.log.Info("openworkflow: schedule tick did not start a run", "schedule", f.Schedule, "scheduledAt", t.ScheduledAt, "outcome", string(t.Outcome))
			}
		}
	}
}

// pokeSchedules makes scheduleLoop look at the schedules now.
func (w *Worker) pokeSchedules() {
	select {
	case w.scheduleWake <- struct{}{}:
	default:
	}
}
