package sqlite

import (
	"embed"
	"fmt"
	"sync"

	"github.com/openworkflow-go/openworkflow/internal/sqlset"
)

// sqlFiles holds the backend's SQL, one file per area (sql/*.sql, split
// as the PostgreSQL backend's): named statements and the fragments they
// share, with the reasons for their shapes beside them. See package
// internal/sqlset for the format, and sql/fragments.sql for the
// conventions every statement follows (named parameters, :now the
// injected clock).
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// queries holds every statement of the backend, expanded. Each field names
// its statement in sql/*.sql; loading fails when a field names no
// statement or a statement has no field. A statement doing what one of the
// PostgreSQL backend's does bears the same name.
type queries struct {
	// fairness.sql
	SetFairness    string `sql:"set_fairness"`
	ListFairQueues string `sql:"list_fair_queues"`
	ReadFairVTime  string `sql:"read_fair_vtime"`
	// runs.sql
	GetRunByIdempotencyKey string `sql:"get_run_by_idempotency_key"`
	InsertRun              string `sql:"insert_run"`
	GetRun                 string `sql:"get_run"`
	ListRuns               string `sql:"list_runs"`
	ListRunsSummary        string `sql:"list_runs_summary"`
	// searchattrs.sql
	SearchAttributeTypes       string `sql:"search_attribute_types"`
	CountMatchingRuns          string `sql:"count_matching_runs"`
	DeclareSearchAttribute     string `sql:"declare_search_attribute"`
	ListSearchAttributeTypes   string `sql:"list_search_attribute_types"`
	RunCreatedAt               string `sql:"run_created_at"`
	DeleteSearchAttributes     string `sql:"delete_search_attributes"`
	InsertSearchAttribute      string `sql:"insert_search_attribute"`
	SearchAttributeTotals      string `sql:"search_attribute_totals"`
	SearchAttributesOf         string `sql:"search_attributes_of"`
	ListRunsByAttribute        string `sql:"list_runs_by_attribute"`
	ListRunsSummaryByAttribute string `sql:"list_runs_summary_by_attribute"`
	CountRuns                  string `sql:"count_runs"`
	CancelRun                  string `sql:"cancel_run"`
	RetryRun                   string `sql:"retry_run"`
	InsertRetryMark            string `sql:"insert_retry_mark"`
	WakeParent                 string `sql:"wake_parent"`
	WakeRun                    string `sql:"wake_run"`
	// pause.sql
	PauseRun          string `sql:"pause_run"`
	ResumePausedRun   string `sql:"resume_paused_run"`
	ResumeCanceledRun string `sql:"resume_canceled_run"`
	InsertResumeMark  string `sql:"insert_resume_mark"`
	// claim.sql
	FailExpiredRuns   string `sql:"fail_expired_runs"`
	ClaimCandidates   string `sql:"claim_candidates"`
	ClaimPlanned      string `sql:"claim_candidates_planned"`
	ClaimRun          string `sql:"claim_run"`
	AdmitRun          string `sql:"admit_run"`
	NextDue           string `sql:"next_due"`
	ExtendLease       string `sql:"extend_lease"`
	ReleaseWorkerRuns string `sql:"release_worker_runs"`
	// limits.sql
	PutLimits           string `sql:"put_limits"`
	QueueBacklog        string `sql:"queue_backlog"`
	CountStartedBacklog string `sql:"count_started_backlog"`
	DeleteLimits        string `sql:"delete_limits"`
	ForgetLimitStarts   string `sql:"forget_limit_starts"`
	ReleaseQueuedRuns   string `sql:"release_queued_runs"`
	UnqueueRun          string `sql:"unqueue_run"`
	ListLimits          string `sql:"list_limits"`
	AdmissionLimits     string `sql:"admission_limits"`
	AdmissionWindow     string `sql:"admission_window"`
	AdmissionNextKey    string `sql:"admission_next_key"`
	AdmissionKeyHead    string `sql:"admission_key_head"`
	AdmissionKeyCounts  string `sql:"admission_key_counts"`
	InsertLimitStart    string `sql:"insert_limit_start"`
	PruneLimitStarts    string `sql:"prune_limit_starts"`
	// steps.sql
	GetStep           string `sql:"get_step"`
	ListSteps         string `sql:"list_steps"`
	ListStepsSummary  string `sql:"list_steps_summary"`
	ListStepHistories string `sql:"list_step_histories"`
	CompleteStep      string `sql:"complete_step"`
	FailStep          string `sql:"fail_step"`
	SetStepChild      string `sql:"set_step_child"`
	// updates.sql
	GetRunUpdate    string `sql:"get_run_update"`
	ListRunUpdates  string `sql:"list_run_updates"`
	CountRunUpdates string `sql:"count_run_updates"`
	InsertRunUpdate string `sql:"insert_run_update"`
	SettleRunUpdate string `sql:"settle_run_update"`
	// signals.sql
	SignalDeliveriesByKey   string `sql:"signal_deliveries_by_key"`
	SignalWaiters           string `sql:"signal_waiters"`
	InsertSignalDelivery    string `sql:"insert_signal_delivery"`
	GetSignalDelivery       string `sql:"get_signal_delivery"`
	RunSignalByKey          string `sql:"run_signal_by_key"`
	InsertRunSignal         string `sql:"insert_run_signal"`
	PendingRunSignal        string `sql:"pending_run_signal"`
	OpenSignalWait          string `sql:"open_signal_wait"`
	OldestRunSignal         string `sql:"oldest_run_signal"`
	ReceiveRunSignal        string `sql:"receive_run_signal"`
	InsertRunSignalDelivery string `sql:"insert_run_signal_delivery"`
	// hooks.sql
	OwnedRunClaim     string `sql:"owned_run_claim"`
	GetHookByStep     string `sql:"get_hook_by_step"`
	GetHookByToken    string `sql:"get_hook_by_token"`
	InsertHook        string `sql:"insert_hook"`
	BumpHookPayloads  string `sql:"bump_hook_payloads"`
	InsertHookPayload string `sql:"insert_hook_payload"`
	WakeHookWaiter    string `sql:"wake_hook_waiter"`
	NextHookPayload   string `sql:"next_hook_payload"`
	ListHooks         string `sql:"list_hooks"`
	// streams.sql
	StreamClosed string `sql:"stream_closed"`
	BumpStream   string `sql:"bump_stream"`
	InsertChunk  string `sql:"insert_chunk"`
	ReadStream   string `sql:"read_stream"`
	ListStreams  string `sql:"list_streams"`
	// writes.sql
	InsertStep          string `sql:"insert_step"`
	CompleteRun         string `sql:"complete_run"`
	FailRun             string `sql:"fail_run"`
	RescheduleRun       string `sql:"reschedule_run"`
	ParkRun             string `sql:"park_run"`
	Savepoint           string `sql:"savepoint"`
	ReleaseSavepoint    string `sql:"release_savepoint"`
	RollbackToSavepoint string `sql:"rollback_to_savepoint"`
	// singleton.sql
	SingletonActive string `sql:"singleton_active"`
	SingletonMark   string `sql:"singleton_mark"`
	// eventwaits.sql
	InsertEventWait      string `sql:"insert_event_wait"`
	GetEventWait         string `sql:"get_event_wait"`
	ListEventWaits       string `sql:"list_event_waits"`
	LookbackEvents       string `sql:"lookback_events"`
	EventWaitPaths       string `sql:"event_wait_paths"`
	EventWaitCandidates  string `sql:"event_wait_candidates"`
	UnindexedEventWaits  string `sql:"unindexed_event_waits"`
	DeliverEventWait     string `sql:"deliver_event_wait"`
	RecordEventWaitError string `sql:"record_event_wait_error"`
	PruneEventWaits      string `sql:"prune_event_waits"`
	CloseEventWait       string `sql:"close_event_wait"`
	// debounce.sql
	DebounceExtend    string `sql:"debounce_extend"`
	DebounceMark      string `sql:"debounce_mark"`
	GetDebouncedRun   string `sql:"get_debounced_run"`
	ListDebouncedRuns string `sql:"list_debounced_runs"`
	// batches.sql
	BatchOpen        string `sql:"batch_open"`
	BatchAddItem     string `sql:"batch_add_item"`
	BatchCountItem   string `sql:"batch_count_item"`
	BatchItems       string `sql:"batch_items"`
	BatchDeleteItems string `sql:"batch_delete_items"`
	BatchClose       string `sql:"batch_close"`
	BatchDue         string `sql:"batch_due"`
	BatchNextDue     string `sql:"batch_next_due"`
	ListBatches      string `sql:"list_batches"`
	// migrate.sql
	MigrationsTableExists        string `sql:"migrations_table_exists"`
	OpenWorkflowMigrationVersion string `sql:"openworkflow_migration_version"`
	CreateDeadlineIndex          string `sql:"create_deadline_index"`
	CreatePriorityIndex          string `sql:"create_priority_index"`
	DropPendingPriorityIndex     string `sql:"drop_pending_priority_index"`
	CreateQueueIndex             string `sql:"create_queue_index"`
	CreateQueueKeyIndex          string `sql:"create_queue_key_index"`
	CreateAdmittedIndex          string `sql:"create_admitted_index"`
	GoMigrationsTableExists      string `sql:"go_migrations_table_exists"`
	GoMigrationVersions          string `sql:"go_migration_versions"`
	// continue.sql
	ContinueGetOwnedRun     string `sql:"continue_get_owned_run"`
	ContinueInsertRun       string `sql:"continue_insert_run"`
	ContinueEndRun          string `sql:"continue_end_run"`
	ContinueMoveSignals     string `sql:"continue_move_signals"`
	ContinueRelinkParent    string `sql:"continue_relink_parent"`
	ContinueScheduleLastRun string `sql:"continue_schedule_last_run"`
	ContinueScheduleRuns    string `sql:"continue_schedule_runs"`
	ContinueCopyAttrs       string `sql:"continue_copy_search_attributes"`
	// fork.sql
	ForkRun   string `sql:"fork_run"`
	ForkSteps string `sql:"fork_steps"`
	ForkMark  string `sql:"fork_mark"`
	ForkList  string `sql:"fork_list"`
	// retention.sql
	PruneCandidates           string `sql:"prune_candidates"`
	PruneCandidatesOfWorkflow string `sql:"prune_candidates_of_workflow"`
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
	AdvanceBulkAction string `sql:"advance_bulk_action"`
	BulkDeletable     string `sql:"bulk_deletable"`
	// definitions.sql
	PutDefinition   string `sql:"put_definition"`
	GetDefinition   string `sql:"get_definition"`
	ListDefinitions string `sql:"list_definitions"`
	// workers.sql
	ForgetWorkers             string `sql:"forget_workers"`
	PutWorker                 string `sql:"put_worker"`
	ListWorkers               string `sql:"list_workers"`
	CountActiveRunsByWorkflow string `sql:"count_active_runs_by_workflow"`
	// schedules.sql
	PutSchedule           string `sql:"put_schedule"`
	GetSchedule           string `sql:"get_schedule"`
	ListSchedules         string `sql:"list_schedules"`
	DeleteSchedule        string `sql:"delete_schedule"`
	PauseSchedule         string `sql:"pause_schedule"`
	ResumeSchedule        string `sql:"resume_schedule"`
	DueSchedules          string `sql:"due_schedules"`
	NextScheduleFire      string `sql:"next_schedule_fire"`
	RunActive             string `sql:"run_active"`
	TickStarted           string `sql:"tick_started"`
	InsertScheduleRun     string `sql:"insert_schedule_run"`
	SaveScheduleState     string `sql:"save_schedule_state"`
	RecordScheduleFailure string `sql:"record_schedule_failure"`
	// events.sql
	EventByIdempotencyKey       string `sql:"event_by_idempotency_key"`
	ClearEventIdempotencyKey    string `sql:"clear_event_idempotency_key"`
	InsertEvent                 string `sql:"insert_event"`
	EventTriggersByName         string `sql:"event_triggers_by_name"`
	ActiveRunsOfWorkflow        string `sql:"active_runs_of_workflow"`
	ActiveRunsOfWorkflowByInput string `sql:"active_runs_of_workflow_by_input"`
	InsertEventEffect           string `sql:"insert_event_effect"`
	GetEvent                    string `sql:"get_event"`
	EventEffects                string `sql:"event_effects"`
	ListEvents                  string `sql:"list_events"`
	ListEventTriggers           string `sql:"list_event_triggers"`
	DeleteEventTriggers         string `sql:"delete_event_triggers"`
	InsertEventTrigger          string `sql:"insert_event_trigger"`
	PruneEventEffects           string `sql:"prune_event_effects"`
	PruneEvents                 string `sql:"prune_events"`
}

// hot returns the statements of the worker's and client's hot paths,
// which Open prepares (see prepare).
func (q *queries) hot() []string {
	return []string{
		q.InsertRun, q.GetRunByIdempotencyKey, q.GetRun,
		q.FailExpiredRuns, q.ClaimCandidates, q.ClaimPlanned, q.ClaimRun, q.AdmitRun, q.ExtendLease,
		q.ParkRun, q.CompleteRun, q.FailRun, q.RescheduleRun, q.CancelRun,
		q.WakeParent, q.WakeRun,
		q.InsertStep, q.GetStep, q.CompleteStep, q.FailStep, q.SetStepChild,
		q.GetSignalDelivery,
		q.OwnedRunClaim, q.StreamClosed, q.BumpStream, q.InsertChunk, q.ReadStream,
		q.Savepoint, q.ReleaseSavepoint, q.RollbackToSavepoint,
	}
}

// loadQueries loads and expands the embedded statements. An error is a
// defect of the embedded files, found at start-up rather than when a
// statement first runs.
func loadQueries() (*queries, error) {
	q := new(queries)
	if err := sqlset.LoadInto(sqlFiles, "sql/*.sql", nil, q); err != nil {
		return nil, fmt.Errorf("sqlite backend: load the embedded SQL: %w", err)
	}
	return q, nil
}

// loadedQueries is loadQueries, run once per process: the statements do
// not depend on the database, so every Backend shares them.
var loadedQueries = sync.OnceValues(loadQueries)
