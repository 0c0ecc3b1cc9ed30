package backend

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrScheduleNotFound: no schedule has that name in this namespace
// (returned wrapped by the [ScheduleStore] methods that name one).
var ErrScheduleNotFound = errors.New("schedule not found")

// OverlapPolicy says what a schedule does with a tick that comes while
// the run of an earlier tick is still pending or running, as Temporal's
// schedule overlap policies do.
type OverlapPolicy string

// Overlap policies.
const (
	// OverlapSkip (the default) skips the tick; it is counted in
	// [Schedule.Skipped].
	OverlapSkip OverlapPolicy = "skip"
	// OverlapBufferOne keeps the first such tick and starts its run as
	// soon as the running one finishes; further ticks meanwhile are
	// skipped.
	OverlapBufferOne OverlapPolicy = "buffer_one"
	// OverlapAllowAll starts a run for every tick, whatever is running.
	OverlapAllowAll OverlapPolicy = "allow_all"
)

// OverlapPolicies lists the valid policies, for messages.
var OverlapPolicies = []OverlapPolicy{OverlapSkip, OverlapBufferOne, OverlapAllowAll}

// Defaults and bounds of a schedule.
const (
	// DefaultCatchupWindow is a schedule's catch-up window when none is
	// given: after the workers were down, ticks up to a minute old still
	// start their runs; older ones are counted in [Schedule.Missed].
	DefaultCatchupWindow = time.Minute
	// MinCatchupWindow is the shortest catch-up window accepted: a tick
	// is fired a few milliseconds after its time, so a shorter window
	// would count on-time ticks as missed.
	MinCatchupWindow = time.Second
	// DefaultTimeZone is the time zone of a schedule that names none.
	DefaultTimeZone = "UTC"
	// MaxScheduleNameLength is the longest schedule name, in bytes.
	MaxScheduleNameLength = 255
	// MaxCronLength is the longest cron expression, in bytes.
	MaxCronLength = 255
	// MaxTicksPerFire bounds the ticks one schedule fires in one
	// transaction (a long catch-up window after downtime may hold many);
	// the rest are fired by the next call, at once.
	MaxTicksPerFire = 100
)

// ScheduleStore is an optional capability of a [Backend]: schedules, each
// of which starts runs of a workflow on a cron expression, as Temporal's
// schedules and DBOS's scheduled workflows do. Discover it with a type
// assertion (b.(backend.ScheduleStore)); both built-in backends implement
// it, in tables of this SDK's own migration line (workflow_schedules and
// workflow_schedule_runs, go migration 7), never in OpenWorkflow's: the
// runs a schedule starts are ordinary runs, which TypeScript workers
// execute like any other.
//
// Every time a store compares with or writes is its own clock (the
// database's, or the injected one of tests), as for runs. The cron and
// overlap logic is [FireLockedSchedule] and [TriggerLockedSchedule],
// shared by every implementation, which provides the transaction they run
// in ([ScheduleTx]).
//
// Exactly one run per tick, however many workers fire at once: a fire
// locks the schedule's row and advances next_fire_at in the transaction
// that inserts the tick's run, so of the workers that saw a tick due one
// starts it and the others find it gone; and (schedule, tick time) is a
// unique key of workflow_schedule_runs, so a tick whose run exists is
// never started again, even if next_fire_at came back to it (a clock set
// back).
type ScheduleStore interface {
	// PutSchedule creates the schedule p.Name, or updates it (upsert by
	// name, so that declaring the same schedules again on every deploy
	// changes nothing). A new schedule's next fire time is the cron's
	// first tick after now; an update keeps it (and a buffered tick)
	// unless the cron expression or the time zone changed, when it is
	// recomputed from now. p.Paused applies only to a new schedule: an
	// existing one stays paused or running as PauseSchedule and
	// ResumeSchedule left it, so a redeploy does not undo an operator's
	// pause. It announces [EventScheduleChanged]. Invalid params fail with
	// a *[ScheduleFieldError] (wrapping [ErrInvalidArgument]) naming the
	// field, and nothing is written.
	PutSchedule(ctx context.Context, p PutScheduleParams) (*Schedule, error)
	// GetSchedule returns the schedule, or an error wrapping
	// [ErrScheduleNotFound].
	GetSchedule(ctx context.Context, name string) (*Schedule, error)
	// ListSchedules lists schedules by name (ascending, byte order), a
	// page at a time.
	ListSchedules(ctx context.Context, p ListSchedulesParams) (*Page[Schedule], error)
	// DeleteSchedule deletes the schedule; the runs it started are kept.
	// It returns an error wrapping [ErrScheduleNotFound] when there is
	// none.
	DeleteSchedule(ctx context.Context, name string) error
	// PauseSchedule stops the schedule's ticks until ResumeSchedule; it is
	// idempotent. Runs already started go on.
	PauseSchedule(ctx context.Context, name string) (*Schedule, error)
	// ResumeSchedule resumes a paused schedule: its next fire time becomes
	// the cron's first tick after now — the ticks that passed while it
	// was paused are not run — and a buffered tick is dropped. Resuming a
	// running schedule changes nothing. It announces
	// [EventScheduleChanged].
	ResumeSchedule(ctx context.Context, name string) (*Schedule, error)
	// TriggerSchedule starts a run of the schedule now, whatever its
	// overlap policy and even while it is paused ("trigger now"), with
	// the present as its scheduled time and Triggered set
	// ([ScheduledRun]). It becomes the schedule's latest run, which the
	// overlap policy of the next ticks looks at. The ticks are unchanged.
	TriggerSchedule(ctx context.Context, name string) (*WorkflowRun, error)
	// FireDueSchedules fires the namespace's due ticks: for each schedule
	// that is not paused and whose next fire time has come (or whose
	// buffered tick's blocking run has finished), up to p.Limit of them,
	// it runs [FireLockedSchedule] in a transaction of its own, skipping a
	// schedule another caller is firing at the same moment. It reports
	// what it did and when the next tick comes.
	//
	// A schedule whose fire fails (its run is refused, its stored fields
	// are no longer valid: [Schedule.Check]) holds up no other: its
	// transaction is rolled back, the failure is recorded on it
	// ([Schedule.LastError], Failures, RetryAt [ScheduleRetryDelay] later,
	// during which it is not fired) and listed in [FireReport.Failures],
	// and the call goes on with the next schedule. The call fails only
	// when the store itself does (the failure cannot be recorded, the
	// context ends).
	FireDueSchedules(ctx context.Context, p FireDueSchedulesParams) (*FireReport, error)
}

// Schedule is a stored schedule.
type Schedule struct {
	// NamespaceID and Name identify the schedule.
	NamespaceID string
	Name        string
	// WorkflowName and Version are the workflow its ticks start (Version
	// nil: unversioned).
	WorkflowName string
	Version      *string
	// Cron is the cron expression as given (5 fields, or 6 with seconds
	// first, or a descriptor such as @hourly or @every 90s; see
	// [ParseCron]); TimeZone the IANA time zone it is read in.
	Cron     string
	TimeZone string
	// Input is every run's JSON input, kept byte for byte; nil is null.
	Input json.RawMessage
	// Overlap is the overlap policy; CatchupWindow how old a tick may be
	// and still start its run after downtime.
	Overlap       OverlapPolicy
	CatchupWindow time.Duration
	// Priority is the priority of the runs it starts
	// ([CreateWorkflowRunParams.Priority]).
	Priority int
	// Paused is true while the schedule does not tick.
	Paused bool
	// NextFireAt is the next tick (UTC, milliseconds). While the schedule
	// is paused it is the tick that was next when it was paused; resuming
	// recomputes it.
	NextFireAt time.Time
	// BufferedAt is the tick buffered by [OverlapBufferOne], waiting for
	// the latest run to finish; nil when none.
	BufferedAt *time.Time
	// LastRunID is the latest run started (by a tick or a trigger), and
	// LastFireAt its scheduled time; nil before the first.
	LastRunID  *string
	LastFireAt *time.Time
	// Started counts the runs started (ticks and triggers), Skipped the
	// ticks the overlap policy skipped, Missed the ticks older than the
	// catch-up window when they could be fired (the workers were down).
	Started, Skipped, Missed int64
	// CreatedAt and UpdatedAt are the first Put's and the latest change's
	// times (UTC, milliseconds).
	CreatedAt, UpdatedAt time.Time
	// LastError is why the latest fire of the schedule failed (its run
	// could not be started: a value the store refused, a stored field no
	// longer valid, …), and LastErrorAt when (UTC, milliseconds); both nil
	// while the schedule is not failing: a fire or a trigger that succeeds
	// clears them, and so does PutSchedule. Failures counts the fires
	// that failed in a row, and RetryAt is when the failing schedule is
	// fired again (nil when it is not failing): until then
	// FireDueSchedules leaves it alone, and the other schedules go on.
	LastError   *string
	LastErrorAt *time.Time
	Failures    int
	RetryAt     *time.Time
}

// PutScheduleParams are the inputs of [ScheduleStore.PutSchedule].
type PutScheduleParams struct {
	// Name identifies the schedule in the namespace: required, valid text
	// of at most [MaxScheduleNameLength] bytes.
	Name string
	// WorkflowName is the workflow each tick starts; required. Version is
	// its version; nil means unversioned.
	WorkflowName string
	Version      *string
	// Cron is the cron expression; required (see [ParseCron]).
	Cron string
	// TimeZone is an IANA time zone name ("Europe/Paris"); "" means
	// [DefaultTimeZone] (UTC).
	TimeZone string
	// Input is the JSON input of every run; nil means null.
	Input json.RawMessage
	// Overlap is the overlap policy; "" means [OverlapSkip].
	Overlap OverlapPolicy
	// CatchupWindow is how old a tick may be and still start its run; 0
	// means [DefaultCatchupWindow] (1 min); at least [MinCatchupWindow].
	CatchupWindow time.Duration
	// Priority is the priority of the runs it starts (0, the default, or
	// up to [MaxPriority] in absolute value).
	Priority int
	// Paused makes a new schedule start paused (see PutSchedule).
	Paused bool
}

// ListSchedulesParams paginate [ScheduleStore.ListSchedules].
type ListSchedulesParams struct {
	// Limit is the page size; 0 means [DefaultPageSize]. Negative fails
	// with [ErrInvalidArgument].
	Limit int
	// After is the Next cursor of a previous page; "" starts at the
	// beginning. A malformed cursor fails with [ErrInvalidArgument].
	After string
}

// FireDueSchedulesParams are the inputs of [ScheduleStore.FireDueSchedules].
type FireDueSchedulesParams struct {
	// Limit is the most schedules fired by one call; 0 means 100.
	Limit int
}

// DefaultFireLimit is FireDueSchedulesParams.Limit's default.
const DefaultFireLimit = 100

// FireReport is what one [ScheduleStore.FireDueSchedules] call did.
type FireReport struct {
	// Firings has one entry per schedule the call fired or advanced.
	Firings []ScheduleFiring
	// NextFireAt is when the earliest next tick of a running schedule
	// comes, by the caller's clock: a store whose due check reads another
	// clock (PostgreSQL's NOW()) returns now + (tick − that clock's now),
	// as [DueTimer] does. Nil when no schedule is running.
	NextFireAt *time.Time
	// Buffered is true when a running schedule holds a buffered tick,
	// which starts when its blocking run finishes: a caller then looks
	// again soon rather than at NextFireAt.
	Buffered bool
	// More is true when the call stopped at its limit (schedules or
	// ticks) with ticks still due: call again at once.
	More bool
	// Failures has one entry per schedule whose fire failed in this call
	// (recorded on the schedule: [Schedule.LastError]); the others were
	// fired all the same.
	Failures []ScheduleFailure
}

// ScheduleFailure is a schedule whose fire failed in one
// [ScheduleStore.FireDueSchedules] call: nothing of the fire was
// committed, the error is stored on the schedule ([Schedule.LastError]),
// and the schedule is not fired again before RetryAt.
type ScheduleFailure struct {
	// Schedule is the schedule's name.
	Schedule string
	// Err is why the fire failed: a *[ScheduleFieldError] for a stored
	// field no longer valid (a row written before a check existed), or
	// what the store answered.
	Err error
	// Failures counts the failed fires in a row, this one included.
	Failures int
	// RetryAt is when the schedule is fired again, by the store's clock
	// ([ScheduleRetryDelay] after the failure).
	RetryAt time.Time
}

// ScheduleRetryDelay is how long a schedule whose fire failed failures
// times in a row is left alone: 1 s after the first failure, doubling
// with each next one, at most [MaxScheduleRetryDelay]. Failures under 1
// count as 1.
func ScheduleRetryDelay(failures int) time.Duration {
	if failures < 1 {
		failures = 1
	}
	if failures > 10 {
		return MaxScheduleRetryDelay
	}
	return min(MaxScheduleRetryDelay, time.Second<<(failures-1))
}

// MaxScheduleRetryDelay is the longest a failing schedule is left alone
// between two tries ([ScheduleRetryDelay]).
const MaxScheduleRetryDelay = 5 * time.Minute

// MaxScheduleErrorLength is the longest [Schedule.LastError] stored, in
// bytes; a longer message is cut, ending in "…".
const MaxScheduleErrorLength = 1024

// ScheduleErrorText is err's message as a store records it in
// [Schedule.LastError]: valid UTF-8 without U+0000, at most
// [MaxScheduleErrorLength] bytes.
func ScheduleErrorText(err error) string {
	msg := strings.ReplaceAll(strings.ToValidUTF8(err.Error(), "\uFFFD"), "\x00", "")
	if len(msg) <= MaxScheduleErrorLength {
		return msg
	}
	cut := MaxScheduleErrorLength - len("…")
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}

// ScheduleFiring is what one schedule did in one fire.
type ScheduleFiring struct {
	// Schedule is the schedule's name.
	Schedule string
	// Missed counts the ticks skipped as older than the catch-up window.
	Missed int64
	// Ticks are the ticks handled, oldest first.
	Ticks []TickResult
}

// TickOutcome says what became of a tick.
type TickOutcome string

// Tick outcomes.
const (
	// TickStarted: the tick's run was started (RunID).
	TickStarted TickOutcome = "started"
	// TickBuffered: the tick waits for the running run to end
	// ([OverlapBufferOne]).
	TickBuffered TickOutcome = "buffered"
	// TickSkipped: the overlap policy skipped the tick.
	TickSkipped TickOutcome = "skipped"
	// TickAlreadyStarted: the tick's run exists already (the schedule's
	// next fire time came back to a tick it had fired); nothing started.
	TickAlreadyStarted TickOutcome = "already-started"
)

// TickResult is one tick of a [ScheduleFiring].
type TickResult struct {
	// ScheduledAt is the tick's time.
	ScheduledAt time.Time
	// Outcome is what became of it; RunID the run started, if any.
	Outcome TickOutcome
	RunID   string
}

// ScheduleFieldError is the error of a schedule field holding a value no
// backend accepts. It wraps [ErrInvalidArgument]. Field is the field's
// name as the HTTP API spells it (name, workflowName, version, cron,
// timeZone, input, overlap, catchupWindow, priority), so each surface can name it
// its own way (openworkflow.yaml says time_zone).
type ScheduleFieldError struct {
	// Schedule is the schedule's name ("" when unknown).
	Schedule string
	// Field and Value are the field at fault and its value as given.
	Field, Value string
	// Reason says what is wrong and what would be right.
	Reason string
}

// Error says which schedule, which field, the value and why:
// `schedule "nightly": cron "61 * * * *": end of range (61) above maximum (59): 61`.
func (e *ScheduleFieldError) Error() string {
	s := ""
	if e.Schedule != "" {
		s = fmt.Sprintf("schedule %q: ", e.Schedule)
	}
	return fmt.Sprintf("%s%s %q: %s", s, e.Field, e.Value, e.Reason)
}

// Unwrap returns [ErrInvalidArgument].
func (e *ScheduleFieldError) Unwrap() error { return ErrInvalidArgument }

// Prepare applies p's defaults (time zone UTC, overlap skip, catch-up
// window 1 min) and checks it as every ScheduleStore does before writing:
// a name of valid text ([ValidText]) of at most [MaxScheduleNameLength]
// bytes; a cron expression and a time zone [ParseCron] accepts; a known
// overlap policy; a catch-up window of at least [MinCatchupWindow]; and
// the fields its runs are made of (workflow name, version, input,
// priority) checked by [CreateWorkflowRunParams.Validate], the check of
// every run, so that a schedule never holds a value its runs would be
// refused. It returns p with its defaults and the parsed cron, or a
// *[ScheduleFieldError] naming the first field at fault.
func (p PutScheduleParams) Prepare() (PutScheduleParams, *Cron, error) {
	bad := func(field, value, reason string) error {
		return &ScheduleFieldError{Schedule: p.Name, Field: field, Value: value, Reason: reason}
	}
	if err := checkName("name", p.Name, MaxScheduleNameLength, true); err != nil {
		fe := err.(*FieldError)
		return p, nil, &ScheduleFieldError{Field: "name", Value: fe.Value, Reason: fe.Reason}
	}
	if p.WorkflowName == "" {
		return p, nil, bad("workflowName", "", "a schedule needs the name of the workflow it starts")
	}
	if err := p.runParams().Validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return p, nil, bad(fe.Field, fe.Value, fe.Reason)
		}
		return p, nil, bad("workflowName", shown(p.WorkflowName), err.Error())
	}
	if p.TimeZone == "" {
		p.TimeZone = DefaultTimeZone
	}
	c, err := ParseCron(p.Cron, p.TimeZone)
	if err != nil {
		var fe *ScheduleFieldError
		if errors.As(err, &fe) {
			fe.Schedule = p.Name
		}
		return p, nil, err
	}
	if p.Overlap == "" {
		p.Overlap = OverlapSkip
	}
	if !p.Overlap.Valid() {
		return p, nil, bad("overlap", string(p.Overlap), "want one of skip, buffer_one, allow_all")
	}
	switch {
	case p.CatchupWindow == 0:
		p.CatchupWindow = DefaultCatchupWindow
	case p.CatchupWindow < MinCatchupWindow:
		return p, nil, bad("catchupWindow", p.CatchupWindow.String(), fmt.Sprintf("must be at least %v (ticks fire a few milliseconds late)", MinCatchupWindow))
	case p.CatchupWindow%time.Millisecond != 0:
		return p, nil, bad("catchupWindow", p.CatchupWindow.String(), "must be a whole number of milliseconds (it is stored in milliseconds)")
	}
	return p, c, nil
}

// runParams are the create params of the runs of the schedule p, for
// [CreateWorkflowRunParams.Validate].
func (p PutScheduleParams) runParams() CreateWorkflowRunParams {
	return CreateWorkflowRunParams{WorkflowName: p.WorkflowName, Version: p.Version, Input: p.Input, Priority: p.Priority}
}

// Check reports why a stored schedule could not be put today, as
// [PutScheduleParams.Prepare] would: a row written before a check existed
// (or by hand) may hold a value no run accepts. The firing loop checks
// every schedule before firing it and skips one that fails, reporting it
// (see [ScheduleStore.FireDueSchedules]). The error is a
// *[ScheduleFieldError].
func (s *Schedule) Check() error {
	_, _, err := PutScheduleParams{
		Name: s.Name, WorkflowName: s.WorkflowName, Version: s.Version, Cron: s.Cron, TimeZone: s.TimeZone,
		Input: s.Input, Overlap: s.Overlap, CatchupWindow: s.CatchupWindow, Priority: s.Priority,
	}.Prepare()
	return err
}

// Valid reports whether p is one of [OverlapPolicies].
func (p OverlapPolicy) Valid() bool {
	switch p {
	case OverlapSkip, OverlapBufferOne, OverlapAllowAll:
		return true
	}
	return false
}

// ScheduleCursor is the position of a schedule in a list: base64 of JSON
// {"name"}.
type ScheduleCursor struct {
	// Name is the schedule's; names order the list.
	Name string `json:"name"`
}

// Encode returns the opaque cursor string.
func (c ScheduleCursor) Encode() string {
	b, _ := json.Marshal(c)
	return base64.StdEncoding.EncodeToString(b)
}

// DecodeScheduleCursor parses a cursor made by [ScheduleCursor.Encode];
// it returns an error wrapping [ErrInvalidArgument] when s is not one.
func DecodeScheduleCursor(s string) (ScheduleCursor, error) {
	var c ScheduleCursor
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil || c.Name == "" {
		return ScheduleCursor{}, fmt.Errorf("%w: cursor %q is not a schedule list cursor", ErrInvalidArgument, s)
	}
	return c, nil
}

// SchedulePage makes the page of the first limit of ss, read with one
// extra row to know whether another page follows (Next is then set).
func SchedulePage(ss []Schedule, limit int) *Page[Schedule] {
	page := &Page[Schedule]{Data: ss}
	if len(ss) > limit {
		page.Data = ss[:limit]
		next := ScheduleCursor{Name: ss[limit-1].Name}.Encode()
		page.Next = &next
	}
	if page.Data == nil {
		page.Data = []Schedule{}
	}
	return page
}
