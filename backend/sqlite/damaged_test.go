package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
)

// filledFile opens a backend on a new file and gives it enough runs for
// workflow_runs to span several pages, all checkpointed into the main
// file (so garbage written there is what SQLite reads next).
func filledFile(t *testing.T) (*Backend, string) {
	t.Helper()
	b, path := openTest(t, nil)
	for i := range 60 {
		mustCreate(t, b, backend.CreateWorkflowRunParams{Input: []byte(`{"pad":"` + strings.Repeat("x", 400) + `","i":` + string(rune('0'+i%10)) + `}`)})
	}
	if _, err := b.db.ExecContext(t.Context(), "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	return b, path
}

// garbleRunsTable writes garbage over every page of the workflow_runs
// table and its indexes but the first, as a failing disk or a stray
// writer would, then makes an unrelated write through a connection of
// its own (another process's, in effect): SQLite's page caches notice
// that the file changed and read the garbage.
func garbleRunsTable(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var root, size int64
	if err := db.QueryRow(`SELECT rootpage, (SELECT page_size FROM pragma_page_size) FROM sqlite_master WHERE name = 'workflow_runs'`).Scan(&root, &size); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, int(size)), (root-1)*size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = 7"); err != nil {
		t.Fatal(err)
	}
}

// fileBytes is the content of the database file and its WAL.
func fileBytes(t *testing.T, path string) string {
	t.Helper()
	var all []byte
	for _, p := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return string(all)
}

// assertDamaged checks that err is the backend's damaged-file error for
// path, saying what to do.
func assertDamaged(t *testing.T, what string, err error, path string) {
	t.Helper()
	var de *DamagedError
	if !errors.As(err, &de) || !errors.Is(err, ErrDamaged) || !errors.Is(err, backend.ErrUnusable) {
		t.Fatalf("%s: err = %v (%T), want a *DamagedError wrapping ErrDamaged and backend.ErrUnusable", what, err, err)
	}
	if de.Path != path {
		t.Errorf("%s: DamagedError.Path = %q, want %q", what, de.Path, path)
	}
	for _, want := range []string{path, "is damaged", "backup", "ow doctor", ".recover"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not say %q", what, err, want)
		}
	}
}

func TestDamagedFileStopsTheBackend(t *testing.T) {
	ctx := context.Background()
	b, path := filledFile(t)
	garbleRunsTable(t, path)

	_, err := b.ClaimWorkflowRuns(ctx, backend.ClaimWorkflowRunsParams{WorkerIDs: []string{"w"}})
	assertDamaged(t, "claim", err, path)

	// From now on nothing reaches the file, not even writes to tables the
	// garbage spared.
	before := fileBytes(t, path)
	_, err = b.PutSchedule(ctx, backend.PutScheduleParams{Name: "nightly", WorkflowName: "wf", Cron: "0 3 * * *"})
	assertDamaged(t, "put schedule", err, path)
	_, err = b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "wf"})
	assertDamaged(t, "create run", err, path)
	_, err = b.ListSchedules(ctx, backend.ListSchedulesParams{})
	assertDamaged(t, "list schedules", err, path)
	_, _, err = b.NextDueAt(ctx)
	assertDamaged(t, "next due", err, path)
	err = b.InTx(ctx, func(context.Context, *sql.Tx) error { return nil })
	assertDamaged(t, "InTx", err, path)
	if fileBytes(t, path) != before {
		t.Fatal("the backend wrote to the damaged file after it reported it damaged")
	}

	// A new Backend of this process on the file shares the verdict; one
	// of another process finds the damage with its integrity check.
	_, err = open(ctx, path, Options{}, true)
	assertDamaged(t, "open again in this process", err, path)
	_, err = open(ctx, path, Options{CheckIntegrity: true}, false)
	assertDamaged(t, "open with CheckIntegrity", err, path)
	var de *DamagedError
	if errors.As(err, &de) && len(de.Problems) == 0 {
		t.Errorf("open with CheckIntegrity: no problems listed in %v", err)
	}
	if fileBytes(t, path) != before {
		t.Fatal("opening the damaged file wrote to it")
	}
}

func TestDamagedTruncatedFile(t *testing.T) {
	ctx := context.Background()
	b, path := filledFile(t)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, st.Size()/2/4096*4096); err != nil {
		t.Fatal(err)
	}
	before := fileBytes(t, path)

	// The integrity check refuses it at once.
	_, err = open(ctx, path, Options{CheckIntegrity: true}, false)
	assertDamaged(t, "open with CheckIntegrity", err, path)

	// Without it, migrating the schema reads a missing page: Open says
	// so the same way.
	_, err = open(ctx, path, Options{}, false)
	assertDamaged(t, "open", err, path)
	if fileBytes(t, path) != before {
		t.Fatal("opening the truncated file wrote to it")
	}
}

func TestDamagedSoundFilePassesTheIntegrityCheck(t *testing.T) {
	b, path := filledFile(t)
	b2, err := open(t.Context(), path, Options{CheckIntegrity: true}, false)
	if err != nil {
		t.Fatalf("open a sound file with CheckIntegrity: %v", err)
	}
	defer b2.Close()
	if _, err := b.ClaimWorkflowRuns(t.Context(), backend.ClaimWorkflowRunsParams{WorkerIDs: []string{"w"}}); err != nil {
		t.Fatal(err)
	}
}

func TestMustExistCreatesNoFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "typo", "ow.db")
	_, err := Open(t.Context(), path, Options{MustExist: true})
	if !errors.Is(err, ErrNoDatabase) || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("open a missing file with MustExist: err = %v, want ErrNoDatabase naming %s", err, path)
	}
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("open with MustExist created %s (stat: %v)", filepath.Dir(path), err)
	}
	// An existing file opens as usual, in mode rw.
	b, _ := openTest(t, nil)
	r := mustCreate(t, b, backend.CreateWorkflowRunParams{})
	b2, err := Open(t.Context(), b.path, Options{MustExist: true})
	if err != nil {
		t.Fatalf("open an existing file with MustExist: %v", err)
	}
	defer b2.Close()
	if _, err := b2.GetWorkflowRun(t.Context(), r.ID); err != nil {
		t.Fatal(err)
	}
}
