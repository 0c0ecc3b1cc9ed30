package openworkflow

import (
	"context"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Schedules start runs of a workflow on a cron expression, as Temporal's
// schedules and DBOS's scheduled workflows do. A schedule is stored in the
// backend ([backend.ScheduleStore]) and fired by every started [Worker] of
// its namespace — whichever worker sees a tick due first starts its run,
// the others find it gone, so each tick starts exactly one run however
// many workers are up. The runs are ordinary runs: a TypeScript worker
// executes them like any other.
//
// Define one from Go ([Client.PutSchedule], or [Worker.RegisterSchedules]
// to declare it with the workflows a worker runs), from openworkflow.yaml
// (schedules:, applied by ow server and ow worker), or through the HTTP
// API (PUT /v1/schedules/{name}). Putting the same spec again changes
// nothing, so declaring schedules on every deploy is safe.

// Schedule records, re-exported from package backend.
type (
	// Schedule is a stored schedule (backend.Schedule): its spec, its
	// next tick (NextFireAt), and what became of its ticks.
	Schedule = backend.Schedule
	// OverlapPolicy says what a tick does while the schedule's latest run
	// is not finished (backend.OverlapPolicy).
	OverlapPolicy = backend.OverlapPolicy
	// ScheduledRun is what a run started by a schedule knows of it: the
	// schedule's name and the tick (backend.ScheduledRun).
	ScheduledRun = backend.ScheduledRun
	// ListSchedulesParams paginate [Client.ListSchedules].
	ListSchedulesParams = backend.ListSchedulesParams
)

// Overlap policies (see backend.OverlapPolicy).
const (
	// OverlapSkip (the default): a tick that comes while the latest run
	// is pending or running is skipped.
	OverlapSkip = backend.OverlapSkip
	// OverlapBufferOne: the first such tick starts its run when the
	// latest run finishes; further ones are skipped.
	OverlapBufferOne = backend.OverlapBufferOne
	// OverlapAllowAll: every tick starts a run.
	OverlapAllowAll = backend.OverlapAllowAll
)

// ErrScheduleNotFound: no schedule has that name in the client's
// namespace.
var ErrScheduleNotFound = backend.ErrScheduleNotFound

// ScheduleSpec defines a schedule. The zero value of every optional field
// is its default.
type ScheduleSpec struct {
	// Name identifies the schedule in the namespace; required. Putting a
	// spec with the name of an existing schedule updates it.
	Name string
	// Workflow is the name of the workflow each tick starts, and Version
	// its version ("" for unversioned); Workflow is required.
	Workflow string
	Version  string
	// Cron is when it ticks: 5 fields ("*/15 * * * *": every quarter of an
	// hour), 6 with seconds first ("0 30 9 * * MON-FRI": 9:30:00 on
	// weekdays), or a descriptor ("@hourly", "@daily", "@every 90s"), as
	// robfig/cron reads them. Required.
	Cron string
	// TimeZone is the IANA time zone the cron is read in ("Europe/Paris");
	// "" means UTC. A daily 09:00 in Europe/Paris follows summer time.
	TimeZone string
	// Input is every run's input, JSON-encoded; nil is null.
	Input any
	// Overlap is what a tick does while the latest run is not finished;
	// "" means [OverlapSkip].
	Overlap OverlapPolicy
	// CatchupWindow is how old a tick may be and still start its run, when
	// the workers were down at its time; older ticks are skipped and
	// counted in Schedule.Missed (and logged by the worker that finds
	// them). 0 means 1 min; at least 1 s.
	CatchupWindow time.Duration
	// Priority is the priority of every run it starts, as [WithPriority]
	// gives one; 0 by default.
	Priority int
	// Paused makes a new schedule start paused. An existing schedule keeps
	// the state PauseSchedule and ResumeSchedule gave it: a redeploy does
	// not undo an operator's pause.
	Paused bool
}

// params encodes the spec as the backend's put parameters; it fails with
// an error wrapping backend.ErrInvalidArgument when the input cannot be
// encoded, or a *backend.ScheduleFieldError for any other bad field.
func (s ScheduleSpec) params() (backend.PutScheduleParams, error) {
	var in []byte
	if s.Input != nil {
		var err error
		if in, err = encodeValue(s.Input); err != nil {
			return backend.PutScheduleParams{}, &backend.ScheduleFieldError{Schedule: s.Name, Field: "input", Value: fmt.Sprintf("%T", s.Input), Reason: err.Error()}
		}
	}
	p := backend.PutScheduleParams{
		Name: s.Name, WorkflowName: s.Workflow, Version: versionPtr(s.Version), Cron: s.Cron, TimeZone: s.TimeZone,
		Input: in, Overlap: s.Overlap, CatchupWindow: s.CatchupWindow, Priority: s.Priority, Paused: s.Paused,
	}
	if _, _, err := p.Prepare(); err != nil {
		return p, err
	}
	return p, nil
}

// Validate checks the spec as the backend will, without storing it: it
// returns a *backend.ScheduleFieldError (wrapping
// backend.ErrInvalidArgument) naming the first field at fault — Field is
// "name", "workflowName", "cron", "timeZone", "input", "overlap",
// "catchupWindow" or "priority" — or nil.
func (s ScheduleSpec) Validate() error {
	_, err := s.params()
	return err
}

// scheduleStore returns the client's backend as a ScheduleStore, or an
// error wrapping backend.ErrNotSupported.
func (c *Client) scheduleStore(op string) (backend.ScheduleStore, error) {
	ss, ok := c.b.(backend.ScheduleStore)
	if !ok {
		return nil, fmt.Errorf("%s: %w: the backend (%T) has no schedules (backend.ScheduleStore)", op, backend.ErrNotSupported, c.b)
	}
	return ss, nil
}

// PutSchedule creates the schedule spec.Name, or updates it to spec
// (upsert by name): an update keeps the next tick unless the cron or the
// time zone changed, and keeps the paused state. It returns the schedule
// as stored, with its next tick. A bad field gives a
// *backend.ScheduleFieldError naming it (errors.Is
// backend.ErrInvalidArgument) and stores nothing.
func (c *Client) PutSchedule(ctx context.Context, spec ScheduleSpec) (*Schedule, error) {
	ss, err := c.scheduleStore("put schedule")
	if err != nil {
		return nil, err
	}
	p, err := spec.params()
	if err != nil {
		return nil, fmt.Errorf("put schedule: %w", err)
	}
	return ss.PutSchedule(ctx, p)
}

// GetSchedule returns the schedule, or an error wrapping
// [ErrScheduleNotFound].
func (c *Client) GetSchedule(ctx context.Context, name string) (*Schedule, error) {
	ss, err := c.scheduleStore("get schedule")
	if err != nil {
		return nil, err
	}
	return ss.GetSchedule(ctx, name)
}

// ListSchedules lists schedules by name, a page at a time.
func (c *Client) ListSchedules(ctx context.Context, p ListSchedulesParams) (*backend.Page[Schedule], error) {
	ss, err := c.scheduleStore("list schedules")
	if err != nil {
		return nil, err
	}
	return ss.ListSchedules(ctx, p)
}

// DeleteSchedule deletes the schedule; the runs it started are kept. It
// returns an error wrapping [ErrScheduleNotFound] when there is none.
func (c *Client) DeleteSchedule(ctx context.Context, name string) error {
	ss, err := c.scheduleStore("delete schedule")
	if err != nil {
		return err
	}
	return ss.DeleteSchedule(ctx, name)
}

// PauseSchedule stops the schedule's ticks until [Client.ResumeSchedule]
// (runs already started go on); pausing a paused schedule changes
// nothing.
func (c *Client) PauseSchedule(ctx context.Context, name string) (*Schedule, error) {
	ss, err := c.scheduleStore("pause schedule")
	if err != nil {
		return nil, err
	}
	return ss.PauseSchedule(ctx, name)
}

// ResumeSchedule resumes a paused schedule from its next tick after now:
// the ticks that passed while it was paused are not run. Resuming a
// running schedule changes nothing.
func (c *Client) ResumeSchedule(ctx context.Context, name string) (*Schedule, error) {
	ss, err := c.scheduleStore("resume schedule")
	if err != nil {
		return nil, err
	}
	return ss.ResumeSchedule(ctx, name)
}

// TriggerSchedule starts a run of the schedule now ("trigger now"),
// whatever its overlap policy and even while it is paused; the run's
// ScheduledRun has the present as its scheduled time and Triggered set.
// The next ticks' overlap policy sees it as the latest run.
func (c *Client) TriggerSchedule(ctx context.Context, name string) (*RunHandle, error) {
	ss, err := c.scheduleStore("trigger schedule")
	if err != nil {
		return nil, err
	}
	run, err := ss.TriggerSchedule(ctx, name)
	if err != nil {
		return nil, err
	}
	return &RunHandle{ID: run.ID, WorkflowName: run.WorkflowName, Run: run, c: c}, nil
}

// UpcomingTicks returns the schedule's next n ticks from NextFireAt on
// (fewer if the cron stops matching within five years). For a paused
// schedule they are the ticks it would have; resuming it recomputes them
// from the time of the resume.
func UpcomingTicks(s *Schedule, n int) ([]time.Time, error) {
	if n <= 0 {
		return nil, nil
	}
	c, err := backend.ParseCron(s.Cron, s.TimeZone)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", s.Name, err)
	}
	return append([]time.Time{s.NextFireAt}, c.Upcoming(s.NextFireAt, n-1)...), nil
}
