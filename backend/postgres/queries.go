package postgres

import (
	"embed"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/internal/sqlset"
)

// sqlFiles holds the backend's SQL, one file per area (sql/*.sql): named
// statements and the fragments they share, with the measured reasons for
// their shapes beside them. See package internal/sqlset for the format.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// notifyChannel is the one LISTEN/NOTIFY channel of every backend (the
// statements' notify fragment names it too); the payload says which
// schema, namespace and run it is about.
const notifyChannel = "openworkflow"

// queries holds every statement of the backend, expanded for one schema.
// Each field names its statement in sql/*.sql; loading fails when a field
// names no statement or a statement has no field. Every statement that
// reads or writes the present takes the backend's clock as its last
// argument (Backend.at).
type queries struct {
	// runs.sql
	LockIdempotencyKey     string `sql:"lock_idempotency_key"`
	GetRunByIdempotencyKey string `sql:"get_run_by_idempotency_key"`
	InsertRun              string `sql:"insert_run"`
	GetRun                 string `sql:"get_run"`
	ListRuns               string `sql:"list_runs"`
	ListRunsSummary        string `sql:"list_runs_summary"`
	CountRuns              string `sql:"count_runs"`
	FoldRunCounts          string `sql:"fold_run_counts"`
	CancelRun              string `sql:"cancel_run"`
	RetryRun               string `sql:"retry_run"`
	WakeParent             string `sql:"wake_parent"`
	ReconcileParkedRuns    string `sql:"reconcile_parked_runs"`
	RunOwnership           string `sql:"run_ownership"`
	// pause.sql
	PauseRun          string `sql:"pause_run"`
	ResumePausedRun   string `sql:"resume_paused_run"`
	ResumeCanceledRun string `sql:"resume_canceled_run"`
	// claim.sql
	ClaimRuns         string `sql:"claim_runs"`
	NextDue           string `sql:"next_due"`
	ExtendLease       string `sql:"extend_lease"`
	ReleaseWorkerRuns string `sql:"release_worker_runs"`
	// fairness.sql
	SetFairness    string `sql:"set_fairness"`
	ListFairQueues string `sql:"list_fair_queues"`
	FairVTime      string `sql:"read_fair_vtime"`
	// limits.sql
	PutLimits             string `sql:"put_limits"`
	DeleteLimits          string `sql:"delete_limits"`
	ListLimits            string `sql:"list_limits"`
	LockAdmission         string `sql:"lock_admission"`
	ClaimCandidatesLocked string `sql:"claim_candidates_locked"`
	AdmissionQueue        string `sql:"admission_queue"`
	AdmissionQueueByKey   string `sql:"admission_queue_by_key"`
	ClaimChosen           string `sql:"claim_chosen"`
	ClaimAdmitting        string `sql:"claim_admitting"`
	GenericPlans          string `sql:"generic_plans"`
	PruneLimitStarts      string `sql:"prune_limit_starts"`
	// steps.sql
	GetStep           string `sql:"get_step"`
	ListSteps         string `sql:"list_steps"`
	ListStepsSummary  string `sql:"list_steps_summary"`
	ListStepHistories string `sql:"list_step_histories"`
	CompleteStep      string `sql:"complete_step"`
	FailStep          string `sql:"fail_step"`
	SetStepChild      string `sql:"set_step_child"`
	StepStatus        string `sql:"step_status"`
	// signals.sql
	LockSignalKey         string `sql:"lock_signal_key"`
	SignalDeliveriesByKey string `sql:"signal_deliveries_by_key"`
	LockSignalWaiters     string `sql:"lock_signal_waiters"`
	DeliverSignal         string `sql:"deliver_signal"`
	GetSignalDelivery     string `sql:"get_signal_delivery"`
	LockSignaledRun       string `sql:"lock_signaled_run"`
	RunSignalByKey        string `sql:"run_signal_by_key"`
	InsertRunSignal       string `sql:"insert_run_signal"`
	PendingRunSignal      string `sql:"pending_run_signal"`
	OpenSignalWait        string `sql:"open_signal_wait"`
	OldestRunSignal       string `sql:"oldest_run_signal"`
	ReceiveRunSignal      string `sql:"receive_run_signal"`
	WakeSignaledRun       string `sql:"wake_signaled_run"`
	// updates.sql
	LockUpdatedRun  string `sql:"lock_updated_run"`
	GetRunUpdate    string `sql:"get_run_update"`
	ListRunUpdates  string `sql:"list_run_updates"`
	CountRunUpdates string `sql:"count_run_updates"`
	InsertRunUpdate string `sql:"insert_run_update"`
	SettleRunUpdate string `sql:"settle_run_update"`
	// hooks.sql
	LockOwnedRun       string `sql:"lock_owned_run"`
	GetHookByStep      string `sql:"get_hook_by_step"`
	LockHookToken      string `sql:"lock_hook_token"`
	GetHookByToken     string `sql:"get_hook_by_token"`
	InsertHook         string `sql:"insert_hook"`
	LockLiveHook       string `sql:"lock_live_hook"`
	DeliverHookPayload string `sql:"deliver_hook_payload"`
	NextHookPayload    string `sql:"next_hook_payload"`
	ListHooks          string `sql:"list_hooks"`
	// streams.sql
	AppendChunk string `sql:"append_chunk"`
	ReadStream  string `sql:"read_stream"`
	ListStreams string `sql:"list_streams"`
	// writes.sql
	InsertStep         string `sql:"insert_step"`
	InsertSteps        string `sql:"insert_steps"`
	CompleteSteps      string `sql:"complete_steps"`
	WriteSteps         string `sql:"write_steps"`
	CompleteRun        string `sql:"complete_run"`
	CompleteRuns       string `sql:"complete_runs"`
	FailRun            string `sql:"fail_run"`
	ParkRun            string `sql:"park_run"`
	ParkRuns           string `sql:"park_runs"`
	RescheduleRun      string `sql:"reschedule_run"`
	Notify             string `sql:"send_notification"`
	NotifyFinished     string `sql:"notify_finished_inline"`
	AsyncCommit        string `sql:"async_commit"`
	InsertRunsReadBack string `sql:"insert_runs_read_back"`
	InsertRunsUnread   string `sql:"insert_runs_unread"`
	NotifyWorkIfDue    string `sql:"notify_work_if_due"`
	// escapes.sql
	RecordEscapes string `sql:"record_escapes"`
	EscapedValues string `sql:"escaped_values"`
	// fork.sql
	ForkRun     string `sql:"fork_run"`
	ForkSteps   string `sql:"fork_steps"`
	ForkEscapes string `sql:"fork_escapes"`
	ForkList    string `sql:"fork_list"`
	// retention.sql
	PruneCandidates           string `sql:"prune_candidates"`
	PruneCandidatesOfWorkflow string `sql:"prune_candidates_of_workflow"`
	PruneEscapes              string `sql:"prune_escapes"`
	PruneSignals              string `sql:"prune_signals"`
	PruneRunSignals           string `sql:"prune_run_signals"`
	PruneRunUpdates           string `sql:"prune_run_updates"`
	PruneChunks               string `sql:"prune_chunks"`
	PruneStreams              string `sql:"prune_streams"`
	PruneHookPayloads         string `sql:"prune_hook_payloads"`
	PruneHooks                string `sql:"prune_hooks"`
	PruneSteps                string `sql:"prune_steps"`
	PruneRuns                 string `sql:"prune_runs"`
	// bulk.sql
	InsertBulkAction  string `sql:"insert_bulk_action"`
	GetBulkAction     string `sql:"get_bulk_action"`
	ListBulkActions   string `sql:"list_bulk_actions"`
	CancelBulkAction  string `sql:"cancel_bulk_action"`
	ClaimBulkAction   string `sql:"claim_bulk_action"`
	LockBulkAction    string `sql:"lock_bulk_action"`
	AdvanceBulkAction string `sql:"advance_bulk_action"`
	BulkLockDeletable string `sql:"bulk_lock_deletable"`
	BulkCancelRuns    string `sql:"bulk_cancel_runs"`
	// definitions.sql
	PutDefinition   string `sql:"put_definition"`
	GetDefinition   string `sql:"get_definition"`
	ListDefinitions string `sql:"list_definitions"`
	// workers.sql
	PutWorker                 string `sql:"put_worker"`
	ListWorkers               string `sql:"list_workers"`
	CountActiveRunsByWorkflow string `sql:"count_active_runs_by_workflow"`
	// schedules.sql
	PutSchedule           string `sql:"put_schedule"`
	GetSchedule           string `sql:"get_schedule"`
	ListSchedules         string `sql:"list_schedules"`
	DeleteSchedule        string `sql:"delete_schedule"`
	PauseSchedule         string `sql:"pause_schedule"`
	LockSchedule          string `sql:"lock_schedule"`
	LockDueSchedule       string `sql:"lock_due_schedule"`
	ResumeSchedule        string `sql:"resume_schedule"`
	DueSchedules          string `sql:"due_schedules"`
	NextScheduleFire      string `sql:"next_schedule_fire"`
	RunActive             string `sql:"run_active"`
	TickStarted           string `sql:"tick_started"`
	InsertScheduleRun     string `sql:"insert_schedule_run"`
	SaveScheduleState     string `sql:"save_schedule_state"`
	RecordScheduleFailure string `sql:"record_schedule_failure"`
	// continue.sql
	ContinueLockRun      string `sql:"continue_lock_run"`
	ContinueInsertRun    string `sql:"continue_insert_run"`
	ContinueEndRun       string `sql:"continue_end_run"`
	ContinueMoveSignals  string `sql:"continue_move_signals"`
	ContinueRelinkParent string `sql:"continue_relink_parent"`
	ContinueScheduleRuns string `sql:"continue_schedule_runs"`
	ContinueCopyAttrs    string `sql:"continue_copy_search_attributes"`
	// searchattrs.sql
	SearchAttributeTypes       string `sql:"search_attribute_types"`
	CountMatchingRuns          string `sql:"count_matching_runs"`
	DeclareSearchAttributes    string `sql:"declare_search_attributes"`
	ListSearchAttributeTypes   string `sql:"list_search_attribute_types"`
	LockRunForSearchAttributes string `sql:"lock_run_for_search_attributes"`
	DeleteSearchAttributes     string `sql:"delete_search_attributes"`
	InsertSearchAttributes     string `sql:"insert_search_attributes"`
	SearchAttributeTotals      string `sql:"search_attribute_totals"`
	SearchAttributesOf         string `sql:"search_attributes_of"`
	ListRunsByAttribute        string `sql:"list_runs_by_attribute"`
	ListRunsSummaryByAttribute string `sql:"list_runs_summary_by_attribute"`
	// singleton.sql
	LockSingleton   string `sql:"lock_singleton"`
	SingletonActive string `sql:"singleton_active"`
	SingletonMark   string `sql:"singleton_mark"`
	// eventwaits.sql
	InsertEventWait      string `sql:"insert_event_wait"`
	GetEventWait         string `sql:"get_event_wait"`
	OpenEventWait        string `sql:"open_event_wait"`
	ListEventWaits       string `sql:"list_event_waits"`
	LookbackEvents       string `sql:"lookback_events"`
	EventWaitPaths       string `sql:"event_wait_paths"`
	EventWaitCandidates  string `sql:"event_wait_candidates"`
	UnindexedEventWaits  string `sql:"unindexed_event_waits"`
	DeliverEventWait     string `sql:"deliver_event_wait"`
	RecordEventWaitError string `sql:"record_event_wait_error"`
	PruneEventWaits      string `sql:"prune_event_waits"`
	LockEventWaiterRuns  string `sql:"lock_event_waiter_runs"`
	CloseEventWait       string `sql:"close_event_wait"`
	WakeEventWaiter      string `sql:"wake_event_waiter"`
	// events.sql
	LockEventKey                string `sql:"lock_event_key"`
	EventByIdempotencyKey       string `sql:"event_by_idempotency_key"`
	ClearEventIdempotencyKey    string `sql:"clear_event_idempotency_key"`
	InsertEvent                 string `sql:"insert_event"`
	InsertEvents                string `sql:"insert_events"`
	InsertUnobservedEvents      string `sql:"insert_unobserved_events"`
	EventTriggersByName         string `sql:"event_triggers_by_name"`
	ActiveRunsOfWorkflow        string `sql:"active_runs_of_workflow"`
	ActiveRunsOfWorkflowByInput string `sql:"active_runs_of_workflow_by_input"`
	InsertEventEffects          string `sql:"insert_event_effects"`
	GetEvent                    string `sql:"get_event"`
	EventEffects                string `sql:"event_effects"`
	ListEvents                  string `sql:"list_events"`
	LockEventTriggers           string `sql:"lock_event_triggers"`
	ListEventTriggers           string `sql:"list_event_triggers"`
	DeleteEventTriggers         string `sql:"delete_event_triggers"`
	InsertEventTriggers         string `sql:"insert_event_triggers"`
	PruneEvents                 string `sql:"prune_events"`
	// debounce.sql
	DebounceExtend    string `sql:"debounce_extend"`
	DebounceMark      string `sql:"debounce_mark"`
	GetDebouncedRun   string `sql:"get_debounced_run"`
	ListDebouncedRuns string `sql:"list_debounced_runs"`
	// batches.sql
	BatchOpen    string `sql:"batch_open"`
	BatchAddItem string `sql:"batch_add_item"`
	BatchItems   string `sql:"batch_items"`
	BatchClose   string `sql:"batch_close"`
	BatchLockDue string `sql:"batch_lock_due"`
	BatchNextDue string `sql:"batch_next_due"`
	ListBatches  string `sql:"list_batches"`
	// statistics.sql
	HasStatistics string `sql:"has_statistics"`
	AnalyzeRuns   string `sql:"analyze_runs"`
	AnalyzeSteps  string `sql:"analyze_steps"`
	// migrate.sql
	MigrationLock                string `sql:"migration_lock"`
	MigrationUnlock              string `sql:"migration_unlock"`
	MigrationsTableExists        string `sql:"migrations_table_exists"`
	OpenWorkflowMigrationVersion string `sql:"openworkflow_migration_version"`
	GoMigrationVersion           string `sql:"go_migration_version"`
}

// loadQueries loads and expands the statements for schema (already
// checked by ValidateSchema). An error is a defect of the embedded files,
// found at start-up rather than when a statement first runs.
func loadQueries(schema string) (queries, error) {
	var q queries
	err := sqlset.LoadInto(sqlFiles, "sql/*.sql", map[string]string{
		"schema":         quoteIdent(schema),
		"schema_literal": "'" + schema + "'",
	}, &q)
	if err != nil {
		return q, fmt.Errorf("postgres backend: load the embedded SQL: %w", err)
	}
	return q, nil
}

// at is the clock argument every statement that reads or writes the
// present takes last: the injected clock's time (Options.Now), or nil, for
// the database's own NOW().
func (b *Backend) at() *time.Time {
	if b.clock == nil {
		return nil
	}
	t := ms(b.clock())
	return &t
}
