package backend

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Limits are the admission limits of one workflow (by name, whatever the
// version), enforced in the claim by every worker that registered them
// (see [LimitStore]). Each zero field means "no limit of this kind"; the
// zero value limits nothing.
//
// A run of a limited workflow is stored waiting for admission (status
// pending, available_at NULL — unclaimable by OpenWorkflow's claim query —
// and go_queued_at the time it may be admitted from) and holds no slot
// until a claim admits it. From its admission until it finishes
// (completed, failed or canceled) it holds one slot of its workflow and
// one of its concurrency key, whether it executes, sleeps, waits or waits
// for a retry, and whoever executes it (as DBOS queues count a dequeued
// workflow until it ends). A worker crash does not end a run: its slot
// passes to the worker that takes it over when the lease expires.
type Limits struct {
	// Concurrency is the most runs of the workflow admitted and not
	// finished at once, across all keys and workers. 0: no limit.
	Concurrency int `json:"concurrency,omitempty"`
	// ConcurrencyPerKey is the most runs admitted and not finished at once
	// per concurrency key (the key each run is started with; runs started
	// without one share the empty key). 0: no limit.
	ConcurrencyPerKey int `json:"concurrencyPerKey,omitempty"`
	// RateLimit is the most admissions (first starts) per concurrency key
	// within any window of RatePeriod. 0: no limit. RatePeriod must be
	// positive (at least a millisecond) when RateLimit is set.
	RateLimit  int           `json:"rateLimit,omitempty"`
	RatePeriod time.Duration `json:"ratePeriod,omitempty"`
}

// IsZero reports whether l limits nothing.
func (l Limits) IsZero() bool { return l == Limits{} }

// Validate reports a limit that cannot work: a negative count, a rate
// without a period or a period without a rate, a period under a
// millisecond (periods are stored in milliseconds), or a count above
// 2^31−1 (stored as a 32-bit integer). The error wraps
// [ErrInvalidArgument] and names the field.
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		n    int
	}{{"Concurrency", l.Concurrency}, {"ConcurrencyPerKey", l.ConcurrencyPerKey}, {"RateLimit", l.RateLimit}} {
		if f.n < 0 || f.n > math.MaxInt32 {
			return fmt.Errorf("%w: limits: %s is %d, want 0 (none) to %d", ErrInvalidArgument, f.name, f.n, math.MaxInt32)
		}
	}
	switch {
	case l.RateLimit > 0 && l.RatePeriod < time.Millisecond:
		return fmt.Errorf("%w: limits: RateLimit %d needs a RatePeriod of at least 1ms (got %v)", ErrInvalidArgument, l.RateLimit, l.RatePeriod)
	case l.RateLimit == 0 && l.RatePeriod != 0:
		return fmt.Errorf("%w: limits: RatePeriod %v without a RateLimit", ErrInvalidArgument, l.RatePeriod)
	}
	return nil
}

// WorkflowLimits are the limits stored for one workflow name.
type WorkflowLimits struct {
	// WorkflowName is the workflow the limits apply to (all versions).
	WorkflowName string `json:"workflowName"`
	// Limits are the stored limits.
	Limits
	// UpdatedAt is when they were last written (UTC, milliseconds).
	UpdatedAt time.Time `json:"updatedAt"`
	// DeclaredBy names the worker that last wrote them
	// ([LimitDeclarer]: its id and the workflow versions it registered);
	// "" when they were written otherwise (PutWorkflowLimits).
	DeclaredBy string `json:"declaredBy,omitempty"`
	// Replaced, when set, are the different limits the last change
	// replaced, and who had declared them: two deployments declaring
	// different limits replace each other's at every start, and this
	// shows it (`ow limits list`, the dashboard's workers page).
	Replaced *ReplacedLimits `json:"replaced,omitempty"`
}

// ReplacedLimits are stored limits that a later write replaced with
// different ones.
type ReplacedLimits struct {
	// Limits are the limits replaced.
	Limits
	// DeclaredBy is who had declared them ([WorkflowLimits.DeclaredBy]).
	DeclaredBy string `json:"declaredBy,omitempty"`
	// At is when they were replaced (UTC, milliseconds).
	At time.Time `json:"at"`
}

// LimitDeclarer is an optional capability of a [LimitStore], which both
// built-in backends implement: storing the limits a worker declares,
// with who declared them, and reporting the different limits they
// replace, so that two deployments declaring different limits for one
// workflow are seen rather than flipping the limits silently at each
// start.
type LimitDeclarer interface {
	// DeclareWorkflowLimits is PutWorkflowLimits (non-zero limits only:
	// zero limits fail with [ErrInvalidArgument], a worker declaring none
	// never removes stored ones) that records declaredBy
	// ([WorkflowLimits.DeclaredBy]). When it replaces different stored
	// limits it records them ([WorkflowLimits.Replaced]) and returns them;
	// replaced is nil when there were none or they were the same.
	DeclareWorkflowLimits(ctx context.Context, workflowName string, l Limits, declaredBy string) (replaced *ReplacedLimits, changed bool, err error)
}

// LimitStore is an optional capability of a [Backend]: the limits of the
// namespace's workflows, in this SDK's own table workflow_limits. A
// workflow with stored limits is limited: every run of it that a Go
// client starts from then on (CreateWorkflowRun and CreateWorkflowRuns
// look the name up in the same statement as the insert) waits for
// admission, unclaimable by OpenWorkflow's claim query and by a claim that
// does not admit that workflow ([ClaimWorkflowRunsParams.Admit]).
//
// Storing limits for a workflow that had none, or changing them, applies
// them to the workflow's backlog in the same transaction: its pending
// runs that never started (whoever started them, the TypeScript SDK
// included) wait for admission from then on, and its runs already
// started and not finished are counted as admitted (from their
// started_at), so the limit holds from the moment it is stored. Runs the
// TypeScript SDK starts later are not limited (its inserts do not look
// the limits up). Both built-in backends implement it.
type LimitStore interface {
	// PutWorkflowLimits stores the limits of workflowName (replacing any),
	// or, for zero limits, removes them as DeleteWorkflowLimits does.
	// Invalid limits ([Limits.Validate]) or an empty or invalid name fail
	// with [ErrInvalidArgument]. It returns whether the stored limits
	// changed.
	PutWorkflowLimits(ctx context.Context, workflowName string, l Limits) (changed bool, err error)
	// DeleteWorkflowLimits removes the limits of workflowName and releases
	// its runs waiting for admission: each becomes an ordinary pending
	// run, available at the time it was queued for. It returns how many
	// runs it released.
	DeleteWorkflowLimits(ctx context.Context, workflowName string) (released int, err error)
	// ListWorkflowLimits returns the namespace's stored limits ordered by
	// workflow name.
	ListWorkflowLimits(ctx context.Context) ([]WorkflowLimits, error)
}

// ValidateConcurrencyKey checks a run's concurrency key: valid text
// ([ValidText]) of at most [MaxConcurrencyKeyLength] bytes. The empty key
// is the key of runs started without one. The error wraps
// [ErrInvalidArgument].
func ValidateConcurrencyKey(key string) error {
	if err := checkText("concurrency key", key); err != nil {
		return err
	}
	if len(key) > MaxConcurrencyKeyLength {
		return fmt.Errorf("%w: concurrency key of %d bytes, longer than %d", ErrInvalidArgument, len(key), MaxConcurrencyKeyLength)
	}
	return nil
}

// MaxConcurrencyKeyLength is the longest concurrency key, in bytes.
const MaxConcurrencyKeyLength = 1024

// WorkflowCap limits how many runs of one workflow a claim may take
// ([ClaimWorkflowRunsParams.Caps]): a worker's per-worker limit minus the
// runs of that workflow it executes.
type WorkflowCap struct {
	// Name is the workflow name (all versions).
	Name string
	// Max is the most runs of it the claim may take; 0 takes none.
	Max int
}

// ClaimCandidate is a run a claim may take, with what orders it: the
// claim's candidates are ordered by Rank (0 due, 1 parked runs due only
// within the lookahead), then by Priority (higher first), then Pass (fair
// shares: lower first), then At (when
// the run became claimable), CreatedAt and ID. Due runs are ordered alike
// whatever their status: a run handed back, with an expired lease or
// woken from a sleep keeps its place ahead of the runs that became due
// after it. Backends build them; [PlanClaim] chooses among them.
type ClaimCandidate struct {
	ID           string
	WorkflowName string
	Rank         int
	Priority     int
	// Pass is the run's pass under fair shares (its own when it waits in
	// the fair queue; the namespace's virtual time, [AdmissionState.VTime],
	// for every other run), so that keys take turns (docs/flow-control.md).
	Pass int64
	// At is available_at, or go_queued_at for a run waiting for admission.
	At, CreatedAt time.Time
	// Admit is set on runs waiting for admission; [PlanClaim] sets it on
	// the ones it admits.
	Admit bool
	// Key is the run's concurrency key ("" for none), for admission.
	Key string
}

// compareClaim orders candidates in claim order.
func compareClaim(a, b ClaimCandidate) int {
	if c := cmp.Compare(a.Rank, b.Rank); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Pass, b.Pass); c != 0 {
		return c
	}
	if c := a.At.Compare(b.At); c != 0 {
		return c
	}
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// AdmissionState is what a claim reads, under its workflows' admission
// locks, to decide which waiting runs to admit.
type AdmissionState struct {
	// Limits are the stored limits of the workflows the claim admits.
	Limits map[string]Limits
	// Active counts, per workflow, the runs admitted and not finished.
	Active map[string]int
	// KeyActive and KeyStarts count, per workflow and concurrency key, the
	// runs admitted and not finished, and the admissions within the rate
	// period (only keys some candidate has need be present).
	KeyActive map[WorkflowKeyName]int
	KeyStarts map[WorkflowKeyName]int
	// VTime is the namespace's virtual time under fair shares, the Pass of
	// the candidates waiting for admission (they are not fair-queued).
	VTime int64
}

// WorkflowKeyName is a workflow name and a concurrency key.
type WorkflowKeyName struct{ Workflow, Key string }

// PlanClaim chooses the runs a claim of slots worker ids takes: from
// candidates (the backend's claimable runs, including those waiting for
// admission, Admit set), in claim order ([ClaimCandidate]), taking a
// waiting run only if admitting it keeps its workflow's limits (st) with
// the runs admitted before it in this claim, and at most caps[name] runs
// of a capped workflow. It returns the chosen runs in claim order, Admit
// still set on those it admits. The candidates slice is reordered.
//
// Choosing in claim order is greedy: a waiting run that does not fit is
// skipped and later ones still may be admitted (another key's), so one
// busy key never holds up the others.
func PlanClaim(candidates []ClaimCandidate, st AdmissionState, caps map[string]int, slots int) []ClaimCandidate {
	slices.SortFunc(candidates, compareClaim)
	admitted := map[string]int{}
	keyAdmitted := map[WorkflowKeyName]int{}
	taken := map[string]int{}
	var chosen []ClaimCandidate
	for _, c := range candidates {
		if len(chosen) == slots {
			break
		}
		if limit, capped := caps[c.WorkflowName]; capped && taken[c.WorkflowName] >= limit {
			continue
		}
		if c.Admit {
			l := st.Limits[c.WorkflowName]
			k := WorkflowKeyName{c.WorkflowName, c.Key}
			if l.Concurrency > 0 && st.Active[c.WorkflowName]+admitted[c.WorkflowName] >= l.Concurrency ||
				l.ConcurrencyPerKey > 0 && st.KeyActive[k]+keyAdmitted[k] >= l.ConcurrencyPerKey ||
				l.RateLimit > 0 && st.KeyStarts[k]+keyAdmitted[k] >= l.RateLimit {
				continue
			}
			admitted[c.WorkflowName]++
			keyAdmitted[k]++
		}
		taken[c.WorkflowName]++
		chosen = append(chosen, c)
	}
	return chosen
}
