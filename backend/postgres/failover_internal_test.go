package postgres

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/openworkflow-go/openworkflow/backend"
)

// TestFailoverErrorsAreNotInvalidWrites: the errors a client sees across
// a failover (production-postgres reference §3) leave a write retryable —
// the worker hands the run back rather than failing it — and are not
// taken for one bad statement of a batch; a data exception is invalid.
func TestFailoverErrorsAreNotInvalidWrites(t *testing.T) {
	for _, tc := range []struct {
		code          string
		lost, invalid bool
	}{
		{"57P01", true, false}, // terminating connection due to unexpected postmaster exit / administrator command
		{"57P02", true, false},
		{"57P03", true, false}, // the database system is shutting down / starting up
		{"25006", true, false}, // cannot execute INSERT in a read-only transaction
		{"08006", true, false}, // connection failure
		{"08001", true, false},
		{"53300", true, false},
		{"22P02", false, true}, // invalid text representation
		{"54001", false, true}, // statement too complex
		{"23505", false, false},
		{"40001", false, false},
	} {
		err := fmt.Errorf("writes of workflow run r: %w", &pgconn.PgError{Code: tc.code, Message: "m"})
		if got := connectionLost(tc.code); got != tc.lost {
			t.Errorf("connectionLost(%s) = %v, want %v", tc.code, got, tc.lost)
		}
		if got := errors.Is(classifyWriteError(err), backend.ErrInvalidArgument); got != tc.invalid {
			t.Errorf("classifyWriteError(%s) invalid = %v, want %v", tc.code, got, tc.invalid)
		}
	}
	// A connection error without SQLSTATE (refused, EOF) is neither.
	refused := errors.New("failed to connect to `user=postgres database=app`: dial tcp 127.0.0.1:5432: connect: connection refused")
	if errors.Is(classifyWriteError(refused), backend.ErrInvalidArgument) {
		t.Error("a refused connection was classified as an invalid write")
	}
}
