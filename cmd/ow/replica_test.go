package main

// ow doctor with a read replica and through PgBouncer: the replica's lag
// is shown, an undeclared transaction-mode pooler is refused with what to
// set, and a declared one works. Real servers, started by the tests
// (internal/pgcluster).

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/config"
	"github.com/openworkflow-go/openworkflow/internal/pgcluster"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
)

func runOW(t *testing.T, dir string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	code := execute(ctx, args, &out, &errOut, dir)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

func TestDoctorShowsTheReadReplica(t *testing.T) {
	if pgtest.Skipped() {
		t.Skip("OPENWORKFLOW_SKIP_POSTGRES=1")
	}
	c := pgcluster.StartCluster(t)
	dir := t.TempDir()
	flags := []string{"--postgres-url", c.PrimaryURL, "--read-replica-url", c.ReplicaURL}
	r := runOW(t, dir, append(flags, "doctor")...)
	if r.code != 0 {
		t.Fatalf("doctor: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "doctor", r.stdout, "read_replica_url", "flag --read-replica-url", "read replica:   up, replay lag")
	r = runOW(t, dir, append(flags, "doctor", "--json")...)
	var d config.Diagnosis
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, r.stdout)
	}
	if d.Replica == nil || !d.Replica.Configured || !d.Replica.Up {
		t.Fatalf("doctor --json: replica %+v, want configured and up", d.Replica)
	}
	c.StopReplica()
	r = runOW(t, dir, append(flags, "doctor")...)
	mustContain(t, "doctor with the replica stopped", r.stdout, "read replica:   DOWN (reads go to the primary)")
}

func TestDoctorThroughPgBouncer(t *testing.T) {
	if pgtest.Skipped() {
		t.Skip("OPENWORKFLOW_SKIP_POSTGRES=1")
	}
	bouncer := pgcluster.StartBouncerFor(t, pgtest.URL())
	dir := t.TempDir()
	schema := []string{"--schema", uniqueName("ow_cli_pgb")}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = adminPool(t).Exec(ctx, "DROP SCHEMA IF EXISTS "+schema[1]+" CASCADE")
	})

	r := runOW(t, dir, append(schema, "--postgres-url", bouncer.TransactionURL, "doctor")...)
	if r.code == 0 {
		t.Fatalf("doctor through an undeclared transaction-mode pool: exit 0\n%s", r.stdout)
	}
	mustContain(t, "doctor through an undeclared transaction-mode pool", r.stdout+r.stderr,
		"pooler in transaction mode", "postgres_pool_mode", "postgres_direct_url", "flag --postgres-url")

	r = runOW(t, dir, append(schema, "--postgres-url", bouncer.SessionURL, "doctor")...)
	if r.code != 0 {
		t.Fatalf("doctor through a session-mode pool: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "doctor through a session-mode pool", r.stdout, "notifications:  ok")

	t.Setenv(config.EnvPostgresPoolMode, "transaction")
	r = runOW(t, dir, append(schema, "--postgres-url", bouncer.TransactionURL, "doctor")...)
	if r.code == 0 {
		t.Fatalf("transaction mode without a direct URL: exit 0")
	}
	mustContain(t, "transaction mode without a direct URL", r.stdout+r.stderr, "postgres_direct_url is not set")
	t.Setenv(config.EnvPostgresDirectURL, pgtest.URL())
	r = runOW(t, dir, append(schema, "--postgres-url", bouncer.TransactionURL, "doctor")...)
	if r.code != 0 {
		t.Fatalf("doctor through a declared transaction-mode pool: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "doctor through a declared transaction-mode pool", r.stdout, "postgres_pool_mode", "transaction", "notifications:  ok")
}
