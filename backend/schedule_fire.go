package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // a schedule's time zone must read the same on every worker, whatever the host has installed

	"github.com/robfig/cron/v3"
)

// Cron is a parsed cron expression in a time zone: the tick times of a
// schedule. Make it with [ParseCron].
type Cron struct {
	expr  string
	sched cron.Schedule
	loc   *time.Location
}

// cronParser reads the standard five fields (minute, hour, day of month,
// month, day of week), an optional sixth leading field of seconds, and the
// descriptors (@yearly, @monthly, @weekly, @daily, @hourly, @every <Go
// duration>), as robfig/cron's own parser with seconds optional.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron parses a cron expression to be read in the IANA time zone tz
// ("" is UTC), with robfig/cron: "*/5 * * * *" (every five minutes),
// "0 30 9 * * MON-FRI" (9:30:00 on weekdays, seconds first),
// "@hourly", "@every 90s". An @every interval must be a whole number of
// seconds, at least 1s ("@every 500ms" and "@every 0s" are refused rather
// than run every second). A time zone prefix inside the expression
// (CRON_TZ=…) is refused in favour of tz, and so is the time zone
// "Local", which differs from one worker to the next. An expression that
// never fires (no time matches within five years, as February 30) is
// refused too. Errors are a *[ScheduleFieldError] naming the field
// ("cron" or "timeZone") and wrapping [ErrInvalidArgument].
func ParseCron(expr, tz string) (*Cron, error) {
	if tz == "" {
		tz = DefaultTimeZone
	}
	if len(expr) > MaxCronLength {
		return nil, &ScheduleFieldError{Field: "cron", Value: shown(expr), Reason: fmt.Sprintf("%d bytes, longer than the limit of %d", len(expr), MaxCronLength)}
	}
	if len(tz) > MaxScheduleNameLength || !ValidText(tz) {
		return nil, &ScheduleFieldError{Field: "timeZone", Value: shown(tz), Reason: "not an IANA time zone name (such as UTC, Europe/Paris or America/New_York)"}
	}
	if tz == "Local" {
		return nil, &ScheduleFieldError{Field: "timeZone", Value: tz, Reason: "the local time zone differs from one worker to the next: name an IANA time zone such as Europe/Paris, or UTC"}
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, &ScheduleFieldError{Field: "timeZone", Value: tz, Reason: "not an IANA time zone name (such as UTC, Europe/Paris or America/New_York)"}
	}
	trimmed := strings.TrimSpace(expr)
	if trimmed == "" {
		return nil, &ScheduleFieldError{Field: "cron", Value: expr, Reason: `empty: want 5 fields ("*/5 * * * *"), 6 with seconds first ("0 30 9 * * MON-FRI"), or a descriptor ("@hourly", "@every 90s")`}
	}
	if strings.HasPrefix(trimmed, "TZ=") || strings.HasPrefix(trimmed, "CRON_TZ=") {
		return nil, &ScheduleFieldError{Field: "cron", Value: expr, Reason: "give the time zone in timeZone, not inside the expression"}
	}
	if rest, ok := strings.CutPrefix(trimmed, "@every "); ok {
		if err := checkEvery(strings.TrimSpace(rest)); err != nil {
			return nil, &ScheduleFieldError{Field: "cron", Value: expr, Reason: err.Error()}
		}
	}
	sched, err := cronParser.Parse(trimmed)
	if err != nil {
		return nil, &ScheduleFieldError{Field: "cron", Value: expr, Reason: err.Error() +
			` (want 5 fields "min hour dom month dow", 6 with seconds first, or a descriptor such as @hourly or @every 90s)`}
	}
	c := &Cron{expr: trimmed, sched: sched, loc: loc}
	if c.Next(time.Now()).IsZero() {
		return nil, &ScheduleFieldError{Field: "cron", Value: expr, Reason: "never fires: no time matches it within five years"}
	}
	return c, nil
}

// checkEvery refuses the interval of "@every <d>" that robfig/cron would
// silently change: it rounds an interval down to whole seconds and makes
// one under a second a second, so "@every 500ms" and "@every 0s" would
// both tick every second and "@every 1.5s" every second too.
func checkEvery(d string) error {
	iv, err := time.ParseDuration(d)
	if err != nil {
		return fmt.Errorf("@every %q: not a Go duration such as 90s, 5m or 1h30m", d)
	}
	if iv < time.Second || iv%time.Second != 0 {
		return fmt.Errorf("@every %v: an interval must be a whole number of seconds, at least 1s (ticks are whole seconds)", iv)
	}
	return nil
}

// Next returns the first tick strictly after t (UTC, whole seconds), or
// the zero time when none comes within five years.
func (c *Cron) Next(t time.Time) time.Time {
	// robfig/cron reads a schedule without a zone of its own in the zone
	// of the time it is given.
	n := c.sched.Next(t.In(c.loc))
	if n.IsZero() {
		return n
	}
	return n.UTC()
}

// Upcoming returns the next n ticks after t.
func (c *Cron) Upcoming(t time.Time, n int) []time.Time {
	var out []time.Time
	for len(out) < n {
		t = c.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

// ScheduledRun is what a run started by a schedule records of it, in the
// "schedule" member of the run's context column (the JSON object in which
// OpenWorkflow keeps a run's "traceContext"; the TypeScript SDK ignores
// members it does not know):
//
//	{"schedule": {"name": "nightly", "scheduledAt": "2025-03-01T02:00:00.000Z", "triggered": false}}
//
// A workflow reads it as RunInfo().Schedule; the HTTP API shows it as a
// run's "schedule".
type ScheduledRun struct {
	// Name is the schedule's name.
	Name string `json:"name"`
	// ScheduledAt is the tick the run is for (the time a triggered run
	// was triggered), UTC with milliseconds — not when it started.
	ScheduledAt time.Time `json:"scheduledAt"`
	// Triggered is true for a run started by TriggerSchedule rather than
	// by a tick.
	Triggered bool `json:"triggered"`
}

// scheduledRunContext is the run context of a scheduled run.
type scheduledRunContext struct {
	Schedule *scheduledRunJSON `json:"schedule"`
}

type scheduledRunJSON struct {
	Name        string `json:"name"`
	ScheduledAt string `json:"scheduledAt"`
	Triggered   bool   `json:"triggered"`
}

// Context returns the run context JSON recording r, with the time in
// [TimeLayout], so that both backends store the same bytes.
func (r ScheduledRun) Context() json.RawMessage {
	b, _ := json.Marshal(scheduledRunContext{Schedule: &scheduledRunJSON{Name: r.Name, ScheduledAt: FormatTime(r.ScheduledAt), Triggered: r.Triggered}})
	return b
}

// ScheduledRunOf reads the schedule a run's context records; ok is false
// for a run no schedule started (or a context it cannot read).
func ScheduledRunOf(runContext json.RawMessage) (r ScheduledRun, ok bool) {
	if len(runContext) == 0 || !strings.Contains(string(runContext), `"schedule"`) {
		return r, false
	}
	var c scheduledRunContext
	if json.Unmarshal(runContext, &c) != nil || c.Schedule == nil || c.Schedule.Name == "" {
		return r, false
	}
	t, err := ParseTime(c.Schedule.ScheduledAt)
	if err != nil {
		return r, false
	}
	return ScheduledRun{Name: c.Schedule.Name, ScheduledAt: t, Triggered: c.Schedule.Triggered}, true
}

// ScheduleTx is what a [ScheduleStore] implementation provides to
// [FireLockedSchedule] and [TriggerLockedSchedule]: the statements of the
// one transaction, holding the schedule's row lock, in which a schedule
// fires.
type ScheduleTx interface {
	// RunActive reports whether the run is pending or running (a missing
	// run, deleted by retention, is not).
	RunActive(ctx context.Context, runID string) (bool, error)
	// StartScheduledRun inserts run p (announcing it as any create does)
	// and its row of workflow_schedule_runs (schedule, scheduledAt,
	// triggered, run id), and returns the run. For a tick (triggered
	// false) whose row exists already it inserts nothing and returns nil.
	StartScheduledRun(ctx context.Context, p CreateWorkflowRunParams, schedule string, scheduledAt time.Time, triggered bool) (*WorkflowRun, error)
	// SaveScheduleState writes s's state: NextFireAt, BufferedAt,
	// LastRunID, LastFireAt, the counters, and updated_at now.
	SaveScheduleState(ctx context.Context, s *Schedule) error
}

// missedPerFire bounds the missed ticks one fire counts (a per-second
// schedule down for a month has millions); the count goes on in the next
// fire, at once.
const missedPerFire = 100_000

// FireLockedSchedule fires schedule s (read under its row lock in tx, and
// updated in place) at now, by the store's clock:
//
//  1. a buffered tick whose blocking run has finished starts its run;
//  2. ticks older than the catch-up window (now − CatchupWindow) are
//     skipped and counted in Missed;
//  3. each tick up to now then starts a run, or is buffered or skipped
//     by the overlap policy — the latest run, or one this fire started,
//     being pending or running — at most [MaxTicksPerFire];
//
// and saves the state when anything happened. A paused schedule does
// nothing. A schedule holding a value [PutScheduleParams.Prepare] refuses
// ([Schedule.Check]: a row written before the check existed) fails with
// that *[ScheduleFieldError] before anything is started. It returns what happened and whether ticks are still due (a
// limit was reached).
func FireLockedSchedule(ctx context.Context, tx ScheduleTx, s *Schedule, now time.Time) (ScheduleFiring, bool, error) {
	if s.Paused {
		return ScheduleFiring{Schedule: s.Name}, false, nil
	}
	if err := s.Check(); err != nil {
		return ScheduleFiring{Schedule: s.Name}, false, fmt.Errorf("%w (a stored value PutSchedule refuses today: put the schedule again with valid fields, or delete it)", err)
	}
	c, err := ParseCron(s.Cron, s.TimeZone)
	if err != nil {
		return ScheduleFiring{Schedule: s.Name}, false, fmt.Errorf("stored schedule %q: %w", s.Name, err)
	}
	fr := &firing{ctx: ctx, tx: tx, s: s, c: c, f: ScheduleFiring{Schedule: s.Name}}
	more, err := fr.fire(now)
	if err != nil || (fr.f.Missed == 0 && len(fr.f.Ticks) == 0) {
		return fr.f, false, err // nothing due: a buffered tick still waits, or another worker fired first
	}
	return fr.f, more, tx.SaveScheduleState(ctx, s)
}

// firing is one FireLockedSchedule: the schedule it changes, what it did,
// and whether the latest run is active (read once, then kept up to date).
type firing struct {
	ctx                 context.Context
	tx                  ScheduleTx
	s                   *Schedule
	c                   *Cron
	f                   ScheduleFiring
	active, activeKnown bool
}

// fire runs the three steps of FireLockedSchedule; more is true when a
// limit stopped it with ticks still due.
func (fr *firing) fire(now time.Time) (more bool, err error) {
	if err := fr.startBuffered(); err != nil {
		return false, err
	}
	if more, err := fr.skipMissed(now.Add(-fr.s.CatchupWindow)); more || err != nil {
		return more, err
	}
	for s := fr.s; !s.NextFireAt.After(now); {
		if len(fr.f.Ticks) >= MaxTicksPerFire {
			return true, nil
		}
		tick := s.NextFireAt
		r, err := fr.tick(tick)
		if err != nil {
			return false, err
		}
		fr.f.Ticks = append(fr.f.Ticks, r)
		if s.NextFireAt = fr.c.Next(tick); s.NextFireAt.IsZero() {
			return false, fmt.Errorf("stored schedule %q: cron %q has no tick after %v", s.Name, s.Cron, tick)
		}
	}
	return false, nil
}

// startBuffered starts the run of a buffered tick whose blocking run is
// no longer active.
func (fr *firing) startBuffered() error {
	if fr.s.BufferedAt == nil {
		return nil
	}
	busy, err := fr.isActive()
	if err != nil || busy {
		return err
	}
	at := *fr.s.BufferedAt
	fr.s.BufferedAt = nil
	r, err := fr.start(at)
	if err == nil {
		fr.f.Ticks = append(fr.f.Ticks, r)
	}
	return err
}

// skipMissed moves next_fire_at past the ticks before cutoff, counting
// them, at most missedPerFire (more is then true).
func (fr *firing) skipMissed(cutoff time.Time) (more bool, err error) {
	s := fr.s
	for s.NextFireAt.Before(cutoff) {
		if fr.f.Missed == missedPerFire {
			return true, nil
		}
		missed := s.NextFireAt
		if s.NextFireAt = fr.c.Next(missed); s.NextFireAt.IsZero() {
			return false, fmt.Errorf("stored schedule %q: cron %q has no tick after %v", s.Name, s.Cron, missed)
		}
		s.Missed++
		fr.f.Missed++
	}
	return false, nil
}

// tick applies the overlap policy to one due tick: start its run, buffer
// it, or skip it.
func (fr *firing) tick(at time.Time) (TickResult, error) {
	s := fr.s
	if s.Overlap == OverlapAllowAll {
		return fr.start(at)
	}
	busy, err := fr.isActive()
	switch {
	case err != nil:
		return TickResult{}, err
	case !busy:
		return fr.start(at)
	case s.Overlap == OverlapBufferOne && s.BufferedAt == nil:
		s.BufferedAt = &at
		return TickResult{ScheduledAt: at, Outcome: TickBuffered}, nil
	default:
		s.Skipped++
		return TickResult{ScheduledAt: at, Outcome: TickSkipped}, nil
	}
}

// isActive reports whether the schedule's latest run is pending or
// running, reading it on first use.
func (fr *firing) isActive() (bool, error) {
	if !fr.activeKnown && fr.s.LastRunID != nil {
		active, err := fr.tx.RunActive(fr.ctx, *fr.s.LastRunID)
		if err != nil {
			return false, err
		}
		fr.active = active
	}
	fr.activeKnown = true
	return fr.active, nil
}

// start starts the run of the tick at, unless it has one already.
func (fr *firing) start(at time.Time) (TickResult, error) {
	s := fr.s
	run, err := fr.tx.StartScheduledRun(fr.ctx, scheduledRunParams(s, at, false), s.Name, at, false)
	if err != nil || run == nil {
		return TickResult{ScheduledAt: at, Outcome: TickAlreadyStarted}, err
	}
	s.LastRunID, s.LastFireAt = &run.ID, &at
	s.Started++
	fr.active, fr.activeKnown = true, true
	return TickResult{ScheduledAt: at, Outcome: TickStarted, RunID: run.ID}, nil
}

// TriggerLockedSchedule starts a run of s now (see
// [ScheduleStore.TriggerSchedule]) in tx, holding s's row lock, and saves
// s's state.
func TriggerLockedSchedule(ctx context.Context, tx ScheduleTx, s *Schedule, now time.Time) (*WorkflowRun, error) {
	if err := s.Check(); err != nil {
		return nil, fmt.Errorf("%w (a stored value PutSchedule refuses today: put the schedule again with valid fields, or delete it)", err)
	}
	at := now.UTC().Truncate(time.Millisecond)
	run, err := tx.StartScheduledRun(ctx, scheduledRunParams(s, at, true), s.Name, at, true)
	if err != nil {
		return nil, err
	}
	s.LastRunID, s.LastFireAt = &run.ID, &at
	s.Started++
	return run, tx.SaveScheduleState(ctx, s)
}

// scheduledRunParams are the create params of the run of s for the tick
// at: the schedule's workflow, input and priority, and its context
// recording the schedule ([ScheduledRun]).
func scheduledRunParams(s *Schedule, at time.Time, triggered bool) CreateWorkflowRunParams {
	return CreateWorkflowRunParams{
		WorkflowName: s.WorkflowName, Version: s.Version, Input: s.Input, Priority: s.Priority,
		Context: ScheduledRun{Name: s.Name, ScheduledAt: at, Triggered: triggered}.Context(),
	}
}
