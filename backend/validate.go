package backend

import (
	"fmt"
	"strings"
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

// Validate checks what every backend requires of a create, before it
// touches the store: a workflow name; text fields that are valid text
// ([ValidText]); JSON values every backend stores unchanged
// ([ValidateJSON]). The error wraps [ErrInvalidArgument] and names the
// field.
func (p CreateWorkflowRunParams) Validate() error {
	if p.WorkflowName == "" {
		return fmt.Errorf("%w: empty workflow name", ErrInvalidArgument)
	}
	texts := []struct {
		field string
		s     *string
	}{
		{"workflow name", &p.WorkflowName}, {"version", p.Version}, {"idempotency key", p.IdempotencyKey},
		{"parent step attempt namespace", p.ParentStepAttemptNamespaceID}, {"parent step attempt id", p.ParentStepAttemptID},
	}
	for _, t := range texts {
		if t.s != nil {
			if err := checkText(t.field, *t.s); err != nil {
				return err
			}
		}
	}
	for _, j := range []struct {
		field string
		raw   []byte
	}{{"config", p.Config}, {"context", p.Context}, {"input", p.Input}} {
		if err := checkJSONField(j.field, j.raw); err != nil {
			return err
		}
	}
	if p.Priority > MaxPriority || p.Priority < -MaxPriority {
		return fmt.Errorf("%w: priority %d is beyond ±%d", ErrInvalidArgument, p.Priority, MaxPriority)
	}
	if p.ConcurrencyKey != nil {
		if err := ValidateConcurrencyKey(*p.ConcurrencyKey); err != nil {
			return err
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
