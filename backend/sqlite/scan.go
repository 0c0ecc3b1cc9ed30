package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// scanRun reads the columns of the run_columns fragment (sql/fragments.sql).
// Legacy statuses are returned under their current names.
func scanRun(s scanner) (*backend.WorkflowRun, error) {
	var (
		r                                     backend.WorkflowRun
		status                                string
		config, context, input, output, errJS sql.NullString
		available, deadline, started, finish  sql.NullString
		queued, admitted, paused              sql.NullString
		created, updated                      string
		attempts, priority                    int64
	)
	err := s.Scan(&r.NamespaceID, &r.ID, &r.WorkflowName, &r.Version, &status,
		&r.IdempotencyKey, &config, &context, &input, &output, &errJS,
		&attempts, &r.ParentStepAttemptNamespaceID, &r.ParentStepAttemptID,
		&r.WorkerID, &available, &deadline, &started, &finish,
		&created, &updated,
		&priority, &r.ConcurrencyKey, &queued, &admitted,
		&paused, &r.PauseReason)
	if err != nil {
		return nil, err
	}
	r.Status = backend.RunStatus(status).Normalize()
	r.Attempts, r.Priority = int(attempts), int(priority)
	if r.ConcurrencyKey != nil && *r.ConcurrencyKey == "" {
		r.ConcurrencyKey = nil // the key a limited run started without one is stored under
	}
	r.Config, r.Context, r.Input = rawJSON(config), rawJSON(context), rawJSON(input)
	r.Output, r.Error = rawJSON(output), rawJSON(errJS)
	times := []struct {
		dst **time.Time
		src sql.NullString
	}{{&r.AvailableAt, available}, {&r.DeadlineAt, deadline}, {&r.StartedAt, started}, {&r.FinishedAt, finish},
		{&r.QueuedAt, queued}, {&r.AdmittedAt, admitted}, {&r.PausedAt, paused}}
	for _, t := range times {
		if *t.dst, err = parseNullTime(t.src); err != nil {
			return nil, fmt.Errorf("workflow run %s: %w", r.ID, err)
		}
	}
	if r.CreatedAt, err = backend.ParseTime(created); err != nil {
		return nil, fmt.Errorf("workflow run %s: created_at: %w", r.ID, err)
	}
	if r.UpdatedAt, err = backend.ParseTime(updated); err != nil {
		return nil, fmt.Errorf("workflow run %s: updated_at: %w", r.ID, err)
	}
	return &r, nil
}

// scanStep reads the columns of the step_columns fragment
// (sql/fragments.sql). A legacy "succeeded" status is returned as
// "completed".
func scanStep(s scanner) (*backend.StepAttempt, error) {
	var (
		a                              backend.StepAttempt
		kind, status                   string
		config, context, output, errJS sql.NullString
		started, finish                sql.NullString
		created, updated               string
	)
	err := s.Scan(&a.NamespaceID, &a.ID, &a.WorkflowRunID, &a.StepName,
		&kind, &status, &config, &context, &output, &errJS,
		&a.ChildWorkflowRunNamespaceID, &a.ChildWorkflowRunID,
		&started, &finish, &created, &updated)
	if err != nil {
		return nil, err
	}
	a.Kind = backend.StepKind(kind)
	a.Status = backend.StepStatus(status).Normalize()
	a.Config, a.Context = rawJSON(config), rawJSON(context)
	a.Output, a.Error = rawJSON(output), rawJSON(errJS)
	if a.StartedAt, err = parseNullTime(started); err != nil {
		return nil, fmt.Errorf("step attempt %s: %w", a.ID, err)
	}
	if a.FinishedAt, err = parseNullTime(finish); err != nil {
		return nil, fmt.Errorf("step attempt %s: %w", a.ID, err)
	}
	if a.CreatedAt, err = backend.ParseTime(created); err != nil {
		return nil, fmt.Errorf("step attempt %s: created_at: %w", a.ID, err)
	}
	if a.UpdatedAt, err = backend.ParseTime(updated); err != nil {
		return nil, fmt.Errorf("step attempt %s: updated_at: %w", a.ID, err)
	}
	return &a, nil
}

// scanParentLink reads the columns of the parent_link fragment
// (sql/fragments.sql): a finished run's key and parent link, all
// wakeParent needs.
func scanParentLink(s scanner) (*backend.WorkflowRun, error) {
	var r backend.WorkflowRun
	if err := s.Scan(&r.NamespaceID, &r.ID, &r.ParentStepAttemptNamespaceID, &r.ParentStepAttemptID); err != nil {
		return nil, err
	}
	return &r, nil
}

// rawJSON turns a nullable JSON TEXT column into a RawMessage (nil for
// NULL).
func rawJSON(s sql.NullString) json.RawMessage {
	if !s.Valid {
		return nil
	}
	return json.RawMessage(s.String)
}

// parseNullTime parses a nullable timestamp column.
func parseNullTime(s sql.NullString) (*time.Time, error) {
	if !s.Valid {
		return nil, nil
	}
	t, err := backend.ParseTime(s.String)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// timeArg formats t for a timestamp column.
func timeArg(t time.Time) string { return backend.FormatTime(t) }

// nullTimeArg formats t, or returns nil (SQL NULL) when t is nil.
func nullTimeArg(t *time.Time) any {
	if t == nil {
		return nil
	}
	return backend.FormatTime(*t)
}

// nullStringArg returns *s, or nil (SQL NULL) when s is nil.
func nullStringArg(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// jsonArg validates m and returns it as TEXT, or nil (SQL NULL) when m is
// empty; what names the field in the error.
func jsonArg(what string, m json.RawMessage) (any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	if err := backend.ValidateJSON(m); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return string(m), nil
}

// jsonArgOr is jsonArg with def stored when m is empty.
func jsonArgOr(what string, m json.RawMessage, def string) (any, error) {
	if len(m) == 0 {
		return def, nil
	}
	return jsonArg(what, m)
}
