package openworkflow_test

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"go.uber.org/goleak"

	"github.com/openworkflow-go/openworkflow/internal/pgtest"
)

// backendEnv selects the backend of the SDK's tests: "sqlite" (the
// default) or "postgres".
const backendEnv = "OPENWORKFLOW_TEST_BACKEND"

// testBackend is the backend this round of the SDK's tests runs on.
func testBackend() string {
	if os.Getenv(backendEnv) == "postgres" {
		return "postgres"
	}
	return "sqlite"
}

// TestMain runs the SDK's tests on SQLite, checks that they leaked no
// goroutine, and then runs them all again on PostgreSQL, in a second
// process of this test binary with the same flags (a schema of its own per
// test; skipped with OPENWORKFLOW_SKIP_POSTGRES=1): every specification
// of the SDK holds on both backends, without each test saying so.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left after the tests on %s: %v\n", testBackend(), err)
			code = 1
		}
	}
	if code == 0 && os.Getenv(backendEnv) == "" && !pgtest.Skipped() {
		fmt.Fprintf(os.Stderr, "=== the SDK's tests again, on PostgreSQL (%s=postgres)\n", backendEnv)
		cmd := exec.Command(os.Args[0], os.Args[1:]...)
		cmd.Env = append(os.Environ(), backendEnv+"=postgres")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "the SDK's tests on PostgreSQL failed: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
