// Package pgcluster starts real PostgreSQL servers and poolers for tests:
// a primary with a streaming replica of its own (initdb, pg_basebackup)
// and PgBouncer in front of a server, each on free local ports in a
// temporary directory, as the unprivileged "postgres" OS user when the
// test runs as root (PostgreSQL and PgBouncer refuse to run as root), and
// torn down when the test ends. It follows the recipes of
// production-postgres.md §4 and §5. Tests skip, saying why, when the
// binaries are missing (fail with OPENWORKFLOW_REQUIRE_PGCLUSTER=1); CI
// installs them (.ci/run). It is imported by test
// files only.
package pgcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultBinDir is where Debian's postgresql-15 package installs the
// server binaries; OPENWORKFLOW_PG_BIN overrides it.
const DefaultBinDir = "/usr/lib/postgresql/15/bin"

// skip skips t saying why, or fails it when OPENWORKFLOW_REQUIRE_PGCLUSTER
// is 1 (CI, which installs the binaries: .ci/run).
func skip(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("OPENWORKFLOW_REQUIRE_PGCLUSTER") == "1" {
		t.Fatalf(format+" (OPENWORKFLOW_REQUIRE_PGCLUSTER=1: required)", args...)
	}
	t.Skipf(format, args...)
}

// BinDir is OPENWORKFLOW_PG_BIN, or [DefaultBinDir].
func BinDir() string {
	if d := os.Getenv("OPENWORKFLOW_PG_BIN"); d != "" {
		return d
	}
	return DefaultBinDir
}

// Cluster is a primary with a streaming replica (asynchronous, with a
// replication slot), both on 127.0.0.1, database "app", user postgres
// with trust authentication.
type Cluster struct {
	// PrimaryURL and ReplicaURL reach database app on each server.
	PrimaryURL, ReplicaURL string
	// PrimaryPort and ReplicaPort are their ports.
	PrimaryPort, ReplicaPort int

	t   testing.TB
	dir string
}

// StartCluster starts a primary and its replica and returns once the
// replica streams. It skips t when the binaries or the postgres user are
// missing. Everything is stopped and removed when t ends.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	for _, b := range []string{"initdb", "pg_ctl", "pg_basebackup"} {
		if _, err := os.Stat(filepath.Join(BinDir(), b)); err != nil {
			skip(t, "no %s in %s (install Debian's postgresql-15, or set OPENWORKFLOW_PG_BIN): %v", b, BinDir(), err)
		}
	}
	c := &Cluster{t: t, dir: tempDir(t, "owrepl-")}
	c.PrimaryPort, c.ReplicaPort = FreePort(t), FreePort(t)
	primary, replica := filepath.Join(c.dir, "primary"), filepath.Join(c.dir, "replica")
	Run(t, filepath.Join(BinDir(), "initdb"), "-D", primary, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	c.startServer(primary, c.PrimaryPort, "primary")
	t.Cleanup(func() { c.stopServer(primary) })
	Run(t, filepath.Join(BinDir(), "createdb"), "-h", "127.0.0.1", "-p", strconv.Itoa(c.PrimaryPort), "-U", "postgres", "app")
	Run(t, filepath.Join(BinDir(), "pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(c.PrimaryPort), "-U", "postgres",
		"-D", replica, "-R", "-X", "stream", "-c", "fast", "-C", "-S", "replica1")
	c.startServer(replica, c.ReplicaPort, "replica1")
	t.Cleanup(func() { c.stopServer(replica) })
	c.PrimaryURL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/app?sslmode=disable", c.PrimaryPort)
	c.ReplicaURL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/app?sslmode=disable", c.ReplicaPort)
	c.waitStreaming()
	return c
}

func (c *Cluster) startServer(dataDir string, port int, name string) {
	c.t.Helper()
	Run(c.t, filepath.Join(BinDir(), "pg_ctl"), "-D", dataDir, "-l", dataDir+".log", "-w", "-t", "60", "-o",
		fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c cluster_name=%s -c fsync=off -c max_connections=60", port, c.dir, name), "start")
}

func (c *Cluster) stopServer(dataDir string) {
	if _, err := os.Stat(filepath.Join(dataDir, "postmaster.pid")); err != nil {
		return // already stopped
	}
	if out, err := command(filepath.Join(BinDir(), "pg_ctl"), "-D", dataDir, "-m", "immediate", "-w", "stop").CombinedOutput(); err != nil {
		c.t.Logf("stop %s: %v: %s", dataDir, err, out)
	}
}

// StopReplica stops the replica at once (pg_ctl -m immediate).
func (c *Cluster) StopReplica() { c.stopServer(filepath.Join(c.dir, "replica")) }

// PauseReplay pauses the replica's WAL replay: it goes on receiving
// (pg_last_wal_receive_lsn moves) but shows nothing new.
func (c *Cluster) PauseReplay(ctx context.Context) {
	c.replicaExec(ctx, "SELECT pg_wal_replay_pause()")
}

// ResumeReplay resumes the replica's WAL replay.
func (c *Cluster) ResumeReplay(ctx context.Context) {
	c.replicaExec(ctx, "SELECT pg_wal_replay_resume()")
}

func (c *Cluster) replicaExec(ctx context.Context, sql string) {
	c.t.Helper()
	conn, err := pgx.Connect(ctx, c.ReplicaURL)
	if err != nil {
		c.t.Fatalf("connect to the replica: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		c.t.Fatalf("%s on the replica: %v", sql, err)
	}
}

// waitStreaming waits until the primary lists the replica as streaming.
func (c *Cluster) waitStreaming() {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		var n int
		conn, err := pgx.Connect(ctx, c.PrimaryURL)
		if err == nil {
			err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'`).Scan(&n)
			conn.Close(context.Background())
		}
		if err == nil && n > 0 {
			return
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("the replica did not stream within 60 s (last error %v); logs in %s", err, c.dir)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Bouncer is a PgBouncer in front of one server, with two databases:
// app_session (pool_mode=session) and app_tx (pool_mode=transaction).
type Bouncer struct {
	// SessionURL and TransactionURL reach the server's database through
	// the session-mode and the transaction-mode pool.
	SessionURL, TransactionURL string
	// Port is PgBouncer's port.
	Port int
}

// StartBouncer starts PgBouncer in front of the server at host:port
// (database dbname). It skips t when pgbouncer is missing.
func StartBouncer(t testing.TB, port int, dbname string) *Bouncer {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/pgbouncer"); serr != nil {
			skip(t, "no pgbouncer (install Debian's pgbouncer package): %v", err)
		}
		bin = "/usr/sbin/pgbouncer"
	}
	dir := tempDir(t, "owpgb-")
	bp := FreePort(t)
	ini := fmt.Sprintf(`[databases]
app_session = host=127.0.0.1 port=%[1]d dbname=%[2]s pool_mode=session pool_size=40
app_tx = host=127.0.0.1 port=%[1]d dbname=%[2]s pool_mode=transaction pool_size=4

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %[3]d
unix_socket_dir = %[4]s
auth_type = trust
auth_file = %[4]s/userlist.txt
admin_users = postgres
pool_mode = session
max_client_conn = 400
logfile = %[4]s/pgbouncer.log
pidfile = %[4]s/pgbouncer.pid
`, port, dbname, bp, dir)
	writeFile(t, filepath.Join(dir, "pgbouncer.ini"), ini)
	writeFile(t, filepath.Join(dir, "userlist.txt"), `"postgres" ""`+"\n")
	Run(t, bin, "-d", filepath.Join(dir, "pgbouncer.ini"))
	pidFile := filepath.Join(dir, "pgbouncer.pid")
	var pid int
	deadline := time.Now().Add(30 * time.Second)
	for pid == 0 {
		if b, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if pid == 0 {
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
				t.Fatalf("pgbouncer wrote no pid file within 30 s; log:\n%s", log)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		for i := 0; i < 200 && syscall.Kill(pid, 0) == nil; i++ {
			time.Sleep(25 * time.Millisecond)
		}
	})
	b := &Bouncer{Port: bp,
		SessionURL:     fmt.Sprintf("postgres://postgres@127.0.0.1:%d/app_session?sslmode=disable", bp),
		TransactionURL: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/app_tx?sslmode=disable", bp),
	}
	return b
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// asPostgres reports whether commands must switch to the postgres OS
// user: when the test runs as root.
func asPostgres() bool { return os.Geteuid() == 0 }

// command builds cmd with a clean environment, as the postgres user when
// the test runs as root (runuser -u postgres).
func command(name string, args ...string) *exec.Cmd {
	env := []string{"PATH=" + BinDir() + ":/usr/sbin:/usr/bin:/bin", "LC_ALL=C"}
	if asPostgres() {
		full := append([]string{"-u", "postgres", "--", "env", "-i"}, env...)
		full = append(full, name)
		return exec.Command("runuser", append(full, args...)...)
	}
	cmd := exec.Command(name, args...)
	cmd.Env = env
	return cmd
}

// Run runs a command as [command] builds it and fails t with its output
// when it fails.
func Run(t testing.TB, name string, args ...string) {
	t.Helper()
	// pg_ctl is always given -l, so the server it leaves running writes
	// to its log file, not to this pipe, and CombinedOutput returns when
	// pg_ctl does; pgbouncer -d detaches the same way.
	out, err := command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// tempDir makes a directory under the system's temporary directory that
// the postgres user owns, removed when t ends.
func tempDir(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if asPostgres() {
		u, err := user.Lookup("postgres")
		if err != nil {
			skip(t, "running as root without a postgres user to run PostgreSQL as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if asPostgres() {
		u, _ := user.Lookup("postgres")
		if u != nil {
			uid, _ := strconv.Atoi(u.Uid)
			gid, _ := strconv.Atoi(u.Gid)
			_ = os.Chown(path, uid, gid)
		}
	}
}

// StartBouncerFor starts PgBouncer (as [StartBouncer]) in front of the
// server and database of url, a test server's URL with trust
// authentication for user postgres.
func StartBouncerFor(t testing.TB, url string) *Bouncer {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	if cfg.Host != "127.0.0.1" && cfg.Host != "localhost" {
		t.Skipf("PgBouncer tests need the test server on this machine, not %s", cfg.Host)
	}
	return StartBouncer(t, int(cfg.Port), cfg.Database)
}
