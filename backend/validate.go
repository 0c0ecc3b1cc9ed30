package backend

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ValidText reports whether s can be stored as text by every backend:
// valid UTF-8 without U+0000 (PostgreSQL's text type refuses both,
// SQLSTATE 22021). A name or id that is not valid text can match no stored
// row, so lookups by it find nothing, and writes refuse it.
func ValidText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// checkText returns an error wrapping [ErrInvalidArgument] naming field
// when s is not [ValidText].
func checkText(field, s string) error {
	if !ValidText(s) {
		return fmt.Errorf("%w: %s %q is not valid text (invalid UTF-8 or U+0000)", ErrInvalidArgument, field, s)
	}
	return nil
}

// checkJSONField is [ValidateJSON] naming field.
func checkJSONField(field string, raw []byte) error {
	if err := ValidateJSON(raw); err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	return nil
}

// Length limits of a run's text fields, in bytes. Every entry point (the
// Go client, the HTTP API, a schedule's fields, openworkflow.yaml, the
// CLI) checks them through [CreateWorkflowRunParams.Validate], so a value
// one of them accepts every other accepts too. They keep each value well
// inside what PostgreSQL can index (an index row holds at most about
// 2,700 bytes: a longer workflow name or idempotency key fails the
// insert).
const (
	// MaxWorkflowNameLength is the longest workflow name.
	MaxWorkflowNameLength = 255
	// MaxVersionLength is the longest workflow version.
	MaxVersionLength = 255
	// MaxIdempotencyKeyLength is the longest idempotency key (of a run or
	// of a signal send).
	MaxIdempotencyKeyLength = 255
	// MaxNamespaceIDLength is the longest namespace id.
	MaxNamespaceIDLength = 255
)

// ValidateNamespaceID checks a namespace id as the backends' Open do:
// 1 to [MaxNamespaceIDLength] bytes of text ([ValidText]); every row a
// backend writes carries it, in indexed columns. The error is a
// *[FieldError] on "namespace".
func ValidateNamespaceID(ns string) error {
	return checkName("namespace", ns, MaxNamespaceIDLength, true)
}

// FieldError is the error of a run field holding a value no backend
// accepts, from [CreateWorkflowRunParams.Validate]. It wraps
// [ErrInvalidArgument]. Field is the field's name as the HTTP API spells
// it (workflowName, version, idempotencyKey, input, priority,
// concurrencyKey, …), so that each surface can name it.
type FieldError struct {
	// Field is the field at fault; Value its value as given, cut to 64
	// bytes and made valid UTF-8 for messages.
	Field, Value string
	// Reason says what is wrong and what would be right.
	Reason string
}

// Error says which field, the value and why:
// `workflowName "\xff": not valid text (invalid UTF-8 or U+0000)`.
func (e *FieldError) Error() string {
	return fmt.Sprintf("%s %q: %s", e.Field, e.Value, e.Reason)
}

// Unwrap returns [ErrInvalidArgument].
func (e *FieldError) Unwrap() error { return ErrInvalidArgument }

// shown is s as an error message shows it: at most 64 bytes, with "…"
// when cut. Invalid bytes are kept (messages quote it with %q).
func shown(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:64] + "…"
}

// checkName checks a required or optional text field of at most max
// bytes; an empty s is refused when required.
func checkName(field, s string, max int, required bool) error {
	switch {
	case s == "" && required:
		return &FieldError{Field: field, Value: s, Reason: "required, and empty"}
	case s == "" && !required:
		return nil
	case len(s) > max:
		return &FieldError{Field: field, Value: shown(s), Reason: fmt.Sprintf("%d bytes, longer than the limit of %d", len(s), max)}
	case !ValidText(s):
		return &FieldError{Field: field, Value: shown(s), Reason: "not valid text (invalid UTF-8 or U+0000): send UTF-8"}
	}
	return nil
}

// Validate checks what every backend requires of a create, before it
// touches the store: a workflow name of at most [MaxWorkflowNameLength]
// bytes, a version of at most [MaxVersionLength] and an idempotency key
// of at most [MaxIdempotencyKeyLength] bytes, all valid text ([ValidText]);
// JSON values every backend stores unchanged ([ValidateJSON]); a priority
// within ±[MaxPriority]; a concurrency key [ValidateConcurrencyKey]
// accepts. It is the one check of a run's fields: a schedule's fields are
// checked with it too ([PutScheduleParams.Prepare]), so a schedule cannot
// hold a value its runs would be refused. The error is a *[FieldError]
// (wrapping [ErrInvalidArgument]) naming the first field at fault.
func (p CreateWorkflowRunParams) Validate() error {
	if err := checkName("workflowName", p.WorkflowName, MaxWorkflowNameLength, true); err != nil {
		return err
	}
	if p.Version != nil {
		if err := checkName("version", *p.Version, MaxVersionLength, false); err != nil {
			return err
		}
	}
	if p.IdempotencyKey != nil {
		if err := checkName("idempotencyKey", *p.IdempotencyKey, MaxIdempotencyKeyLength, false); err != nil {
			return err
		}
	}
	for _, t := range []struct {
		field string
		s     *string
	}{{"parentStepAttemptNamespaceId", p.ParentStepAttemptNamespaceID}, {"parentStepAttemptId", p.ParentStepAttemptID}} {
		if t.s != nil && !ValidText(*t.s) {
			return &FieldError{Field: t.field, Value: shown(*t.s), Reason: "not valid text (invalid UTF-8 or U+0000)"}
		}
	}
	for _, j := range []struct {
		field string
		raw   []byte
	}{{"config", p.Config}, {"context", p.Context}, {"input", p.Input}} {
		if err := ValidateJSON(j.raw); err != nil {
			return &FieldError{Field: j.field, Value: shown(string(j.raw)), Reason: "cannot be stored: " + strings.TrimPrefix(err.Error(), ErrInvalidArgument.Error()+": ")}
		}
	}
	if p.Priority > MaxPriority || p.Priority < -MaxPriority {
		return &FieldError{Field: "priority", Value: strconv.Itoa(p.Priority), Reason: fmt.Sprintf("must be from %d to %d", -MaxPriority, MaxPriority)}
	}
	if p.ConcurrencyKey != nil {
		if err := ValidateConcurrencyKey(*p.ConcurrencyKey); err != nil {
			return &FieldError{Field: "concurrencyKey", Value: shown(*p.ConcurrencyKey), Reason: strings.TrimPrefix(err.Error(), ErrInvalidArgument.Error()+": ")}
		}
	}
	if p.Singleton != nil {
		if err := p.Singleton.Validate(); err != nil {
			return err
		}
	}
	if p.Fairness != nil {
		if err := p.Fairness.Validate(); err != nil {
			return err
		}
	}
	if p.Claim != nil {
		if err := p.validateClaim(); err != nil {
			return err
		}
	}
	return p.SearchAttributes.Validate()
}

// validateClaim checks that a create that claims its run starts it now
// and plainly: nothing that could make it wait, dedupe or link.
func (p CreateWorkflowRunParams) validateClaim() error {
	if p.Claim.WorkerID == "" || !ValidText(p.Claim.WorkerID) {
		return &FieldError{Field: "claim.workerId", Value: shown(p.Claim.WorkerID), Reason: "must be non-empty valid text"}
	}
	if p.Claim.LeaseDuration < time.Millisecond {
		return &FieldError{Field: "claim.leaseDuration", Value: p.Claim.LeaseDuration.String(), Reason: "must be at least 1ms"}
	}
	for _, o := range []struct {
		field string
		set   bool
	}{{"idempotencyKey", p.IdempotencyKey != nil}, {"singleton", p.Singleton != nil}, {"availableAt", p.AvailableAt != nil},
		{"deadlineAt", p.DeadlineAt != nil}, {"fairness", p.Fairness != nil}, {"searchAttributes", len(p.SearchAttributes) > 0}, {"parentStepAttemptId", p.ParentStepAttemptID != nil}} {
		if o.set {
			return &FieldError{Field: "claim", Value: p.Claim.WorkerID, Reason: "a create that claims its run cannot also set " + o.field}
		}
	}
	return nil
}

// Validate checks a signal send as [CreateWorkflowRunParams.Validate]
// checks a create: a signal name, valid text, storable data.
func (p SendSignalParams) Validate() error {
	if p.Signal == "" {
		return fmt.Errorf("%w: empty signal name", ErrInvalidArgument)
	}
	if err := checkText("signal name", p.Signal); err != nil {
		return err
	}
	if p.IdempotencyKey != nil {
		if err := checkText("idempotency key", *p.IdempotencyKey); err != nil {
			return err
		}
	}
	return checkJSONField("signal data", p.Data)
}

// Validate checks a run-addressed signal send: a run id, a signal name,
// valid text, storable data.
func (p SignalRunParams) Validate() error {
	if p.WorkflowRunID == "" {
		return fmt.Errorf("%w: empty workflow run id", ErrInvalidArgument)
	}
	if err := checkText("workflow run id", p.WorkflowRunID); err != nil {
		return err
	}
	return SendSignalParams{Signal: p.Signal, Data: p.Data, IdempotencyKey: p.IdempotencyKey}.Validate()
}
