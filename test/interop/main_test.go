package interop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend/postgres"
)

// The npm packages the TypeScript side runs on. The install directory is
// keyed by these, so changing one installs afresh.
const (
	tsOpenWorkflow = "openworkflow@0.10"
	tsPostgres     = "postgres@3"
	tsOtelAPI      = "@opentelemetry/api@1"
)

const defaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

var (
	// pgURL is the database every test shares (one namespace or schema each).
	pgURL string
	// nodeDir holds node_modules and a copy of harness.mjs.
	nodeDir string
	// harnessPath is the harness script inside nodeDir.
	harnessPath string
	// skipReason, when set, skips every test (OPENWORKFLOW_SKIP_*).
	skipReason string
	// pool is a pool on pgURL for the tests' own SQL.
	pool *pgxpool.Pool
	// sharedSchema is the schema most tests share, one namespace each:
	// created, migrated and dropped by this process, so that other users
	// of the server are never touched.
	sharedSchema = randomName("owt_interop_")
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("OPENWORKFLOW_SKIP_INTEROP") == "1" {
		skipReason = "OPENWORKFLOW_SKIP_INTEROP=1"
		return m.Run()
	}
	pgURL = os.Getenv("OPENWORKFLOW_TEST_POSTGRES_URL")
	if pgURL == "" {
		pgURL = defaultPostgresURL
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	pool, err = pgxpool.New(ctx, pgURL)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		if os.Getenv("OPENWORKFLOW_SKIP_POSTGRES") == "1" {
			skipReason = fmt.Sprintf("PostgreSQL unreachable and OPENWORKFLOW_SKIP_POSTGRES=1: %v", err)
			return m.Run()
		}
		fmt.Fprintf(os.Stderr, "interop tests need PostgreSQL at %s (set OPENWORKFLOW_TEST_POSTGRES_URL, or OPENWORKFLOW_SKIP_POSTGRES=1 to skip): %v\n", pgURL, err)
		return 1
	}
	defer pool.Close()
	// Create and migrate the shared schema once, with Go, before any test
	// (and any TypeScript process) opens it: OpenWorkflow's own migrations
	// take no lock, so two first-time migrations at once could collide.
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{sharedSchema}.Sanitize()); err != nil {
		fmt.Fprintf(os.Stderr, "interop: create schema %s: %v\n", sharedSchema, err)
		return 1
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := pool.Exec(dctx, "DROP SCHEMA "+pgx.Identifier{sharedSchema}.Sanitize()+" CASCADE"); err != nil {
			fmt.Fprintf(os.Stderr, "interop: drop schema %s: %v\n", sharedSchema, err)
		}
	}()
	if err := postgres.Migrate(ctx, pool, sharedSchema); err != nil {
		fmt.Fprintf(os.Stderr, "interop: migrate %s: %v\n", sharedSchema, err)
		return 1
	}
	if nodeDir, err = installNode(); err != nil {
		fmt.Fprintf(os.Stderr, "interop: %v\n(set OPENWORKFLOW_SKIP_INTEROP=1 to skip these tests)\n", err)
		return 1
	}
	if harnessPath, err = copyHarness(nodeDir); err != nil {
		fmt.Fprintf(os.Stderr, "interop: %v\n", err)
		return 1
	}
	defer os.RemoveAll(filepath.Dir(harnessPath))
	return m.Run()
}

// installNode makes sure the TypeScript packages are installed in a
// directory under os.TempDir() keyed by their versions, installing them
// with npm the first time, and returns the directory.
func installNode() (string, error) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("the Go/TypeScript interop tests need %s on PATH (Node.js 20 or newer): %w", tool, err)
		}
	}
	key := strings.NewReplacer("@", "-", "/", "-").Replace(strings.Join([]string{tsOpenWorkflow, tsPostgres, tsOtelAPI}, "_"))
	dir := filepath.Join(os.TempDir(), "openworkflow-go-interop", strings.TrimLeft(key, "-"))
	if installed(dir) {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	// Install into a fresh directory and rename it into place, so that a
	// concurrent or interrupted install never leaves a half-installed dir.
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "install", "--prefix", tmp, "--no-audit", "--no-fund", "--loglevel=error",
		tsOpenWorkflow, tsPostgres, tsOtelAPI)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("npm install %s %s %s: %w\n%s", tsOpenWorkflow, tsPostgres, tsOtelAPI, err, out)
	}
	if err := os.Rename(tmp, dir); err != nil && !installed(dir) {
		return "", fmt.Errorf("move npm install into %s: %w", dir, err)
	}
	return dir, nil
}

func installed(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", "openworkflow", "package.json"))
	if err != nil {
		return false
	}
	var pkg struct{ Version string }
	return json.Unmarshal(b, &pkg) == nil && strings.HasPrefix(pkg.Version, "0.10.")
}

// copyHarness copies harness.mjs into a per-process directory inside dir,
// where node resolves its imports from dir/node_modules.
func copyHarness(dir string) (string, error) {
	src, err := os.ReadFile(filepath.Join("harness", "harness.mjs"))
	if err != nil {
		return "", fmt.Errorf("read harness: %w", err)
	}
	runDir, err := os.MkdirTemp(dir, "run-")
	if err != nil {
		return "", err
	}
	p := filepath.Join(runDir, "harness.mjs")
	return p, os.WriteFile(p, src, 0o644)
}

// setup skips the test when the suite is disabled and marks it parallel.
func setup(t *testing.T) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	t.Parallel()
}

// randomName returns prefix + 12 random hex digits (a namespace or schema).
func randomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// eventually polls cond every 50 ms until it returns true or timeout
// passes, then fails the test with what cond last said.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last: %s", timeout, what, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
