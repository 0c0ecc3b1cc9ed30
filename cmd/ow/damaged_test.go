package main

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
	"github.com/openworkflow-go/openworkflow/config"
)

// damagedEnv returns an env whose SQLite file held 50 runs and was then
// damaged by damage (called with the path once the file is closed).
func damagedEnv(t *testing.T, damage func(t *testing.T, path string)) *env {
	t.Helper()
	e := newEnv(t)
	ctx := context.Background()
	b, err := sqlite.Open(ctx, e.db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := ow.NewClient(b)
	for i := range 50 {
		if _, err := c.StartByName(ctx, "greet", "", map[string]any{"i": i, "pad": strings.Repeat("x", 400)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	damage(t, e.db)
	return e
}

// zeroRunsTable overwrites the first page of the workflow_runs table.
func zeroRunsTable(t *testing.T, path string) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var page, size int64
	err = db.QueryRow(`SELECT rootpage, (SELECT page_size FROM pragma_page_size) FROM sqlite_master WHERE name = 'workflow_runs'`).Scan(&page, &size)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, size), (page-1)*size); err != nil {
		t.Fatal(err)
	}
}

func TestADamagedSQLiteFileSaysSoAndWhatToDo(t *testing.T) {
	t.Parallel()
	damages := []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"a zeroed page of the runs table", zeroRunsTable},
		{"a file cut in half", func(t *testing.T, path string) {
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, st.Size()/2/4096*4096); err != nil {
				t.Fatal(err)
			}
		}},
		{"a file cut to 10 bytes", func(t *testing.T, path string) {
			if err := os.Truncate(path, 10); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			e := damagedEnv(t, d.damage)
			// Commands reading the damaged pages fail saying so; the demo
			// and the worker check the file before starting a worker on it.
			for _, args := range [][]string{{"runs", "list"}, {"demo", "--packages", "container/list", "--sleep", "0"}, {"worker"}} {
				r := e.run(args...)
				if r.code != 1 {
					t.Errorf("ow %s: exit %d, want 1\n%s", args[0], r.code, r.stdout)
				}
				mustContain(t, "ow "+strings.Join(args, " ")+" stderr", r.stderr, e.db, "is damaged", "the integrity check reports", "restore it from a backup", "move it aside")
			}

			r := e.run("doctor")
			if r.code != 1 {
				t.Errorf("ow doctor: exit %d, want 1", r.code)
			}
			mustContain(t, "doctor", r.stdout, "integrity:      DAMAGED: SQLite's PRAGMA quick_check reports:", "opened:         no")
			mustContain(t, "doctor stderr", r.stderr, "is damaged")
			if strings.Contains(r.stdout, "reachable:      yes") {
				t.Errorf("doctor calls the damaged file reachable:\n%s", r.stdout)
			}
			dj := decode[config.Diagnosis](t, e.run("doctor", "--json"))
			if dj.Integrity != "damaged" || len(dj.IntegrityProblems) == 0 || dj.Reachable {
				t.Errorf("doctor --json: integrity %q, problems %q, reachable %v", dj.Integrity, dj.IntegrityProblems, dj.Reachable)
			}
		})
	}

	t.Run("a sound file passes the check", func(t *testing.T) {
		t.Parallel()
		e := damagedEnv(t, func(*testing.T, string) {})
		mustContain(t, "doctor", e.ok("doctor").stdout, "integrity:      ok", "reachable:      yes", "50 pending")
		if d := decode[config.Diagnosis](t, e.ok("doctor", "--json")); d.Integrity != "ok" {
			t.Errorf("doctor --json: integrity %q", d.Integrity)
		}
	})
}

// garbleRuns writes garbage over the root pages of workflow_runs and its
// indexes in the SQLite file at path, which a running process has open:
// it checkpoints the WAL first (so the garbage is what SQLite reads) and
// makes an unrelated write after, so that the process's page caches see
// the file changed.
func garbleRuns(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	var size int64
	if err := db.QueryRow("PRAGMA page_size").Scan(&size); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(`SELECT rootpage FROM sqlite_master WHERE tbl_name = 'workflow_runs' AND rootpage > 0`)
	if err != nil {
		t.Fatal(err)
	}
	var pages []int64
	for rows.Next() {
		var p int64
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		pages = append(pages, p)
	}
	if err := rows.Err(); err != nil || len(pages) < 2 {
		t.Fatalf("root pages of workflow_runs: %v, %v", pages, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if _, err := f.WriteAt([]byte(strings.Repeat("\xa5", int(size))), (p-1)*size); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = 7"); err != nil {
		t.Fatal(err)
	}
}

func TestDamagedFileStopsARunningWorkerProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ow")
	}
	bin := buildOW(t)
	e := newEnv(t)
	e.ok("migrate")
	proc := exec.Command(bin, "--sqlite-path", e.db, "worker")
	proc.Dir, proc.Env = e.dir, cleanEnv()
	stderr, err := proc.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	lines := watchLines(stderr)
	exited := make(chan error, 1)
	go func() { <-lines.done; exited <- proc.Wait() }()
	if !lines.waitFor(time.Minute, func(s string) bool { return strings.Contains(s, "worker on sqlite") }) {
		_ = proc.Process.Kill()
		<-exited
		t.Fatalf("the worker did not start:\n%s", lines.text())
	}

	garbleRuns(t, e.db)

	select {
	case err = <-exited:
	case <-time.After(2 * time.Minute):
		_ = proc.Process.Kill()
		<-exited
		t.Fatalf("the worker still runs two minutes after its file was damaged:\n%s", lines.text())
	}
	out := lines.text()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("ow worker: %v, want exit status 1\n%s", err, out)
	}
	mustContain(t, "ow worker stderr", out, e.db, "is damaged", "restore it from a backup")
	if n := strings.Count(out, "worker stopped claiming runs"); n != 1 || strings.Contains(out, "tick failed") {
		t.Errorf("want the stop said once and no retry; stderr:\n%s", out)
	}
}
