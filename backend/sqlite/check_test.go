package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
)

// damageFixture writes a database of 300 runs (padded so that the runs
// table spans many pages), closes it and returns its path and the number
// of its pages and their size.
func damageFixture(t *testing.T) (path string, pages, pageSize int64) {
	t.Helper()
	ctx := context.Background()
	path = filepath.Join(t.TempDir(), "ow.db")
	b, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 300)
	for i := range 300 {
		in := []byte(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, pad))
		if _, err := b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "w", Input: in}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil { // checkpoints the WAL into the file
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	return path, st.Size() / pageSize, pageSize
}

// rootPage returns the first page of the b-tree of the table or index
// name.
func rootPage(t *testing.T, path, name string) int64 {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var p int64
	if err := db.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = ?`, name).Scan(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

// zeroPage overwrites page n (1-based) of the file with zeros.
func zeroPage(t *testing.T, path string, n, pageSize int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, pageSize), (n-1)*pageSize); err != nil {
		t.Fatal(err)
	}
}

func TestCheckFileFindsNothingInASoundFile(t *testing.T) {
	t.Parallel()
	path, _, _ := damageFixture(t)
	problems, err := CheckFile(context.Background(), path, 10)
	if err != nil || problems != nil {
		t.Fatalf("CheckFile of a sound file = %q, %v", problems, err)
	}
	if _, err := CheckFile(context.Background(), path+".missing", 10); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("CheckFile of a missing file: %v; want os.ErrNotExist", err)
	}
}

func TestADamagedFileIsReportedAsDamaged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("a zeroed page of the runs table", func(t *testing.T) {
		t.Parallel()
		path, _, size := damageFixture(t)
		zeroPage(t, path, rootPage(t, path, "workflow_runs"), size)
		problems, err := CheckFile(ctx, path, 10)
		if err != nil || len(problems) == 0 || len(problems) > 10 {
			t.Fatalf("CheckFile = %q, %v; want SQLite's problems", problems, err)
		}
		// The schema is intact, so the file opens; reading the runs fails.
		b, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer b.Close()
		_, err = b.ListWorkflowRuns(ctx, backend.ListWorkflowRunsParams{})
		if err == nil || !IsDamaged(err) {
			t.Errorf("listing the runs of a damaged file: %v; want an error IsDamaged recognises", err)
		}
	})

	t.Run("a file cut in half", func(t *testing.T) {
		t.Parallel()
		path, pages, size := damageFixture(t)
		if err := os.Truncate(path, pages/2*size); err != nil {
			t.Fatal(err)
		}
		if problems, err := CheckFile(ctx, path, 10); err != nil || len(problems) == 0 {
			t.Errorf("CheckFile = %q, %v; want SQLite's problems", problems, err)
		}
		if b, err := Open(ctx, path, Options{}); err == nil || !IsDamaged(err) {
			if b != nil {
				b.Close()
			}
			t.Errorf("Open: %v; want an error IsDamaged recognises", err)
		}
	})

	for _, n := range []int64{1, 10, 15} {
		t.Run(fmt.Sprintf("a file cut to %d bytes, inside the header", n), func(t *testing.T) {
			t.Parallel()
			path, _, _ := damageFixture(t)
			if err := os.Truncate(path, n); err != nil {
				t.Fatal(err)
			}
			// SQLite alone would take such a file for a new, empty
			// database and write a fresh schema over it.
			b, err := Open(ctx, path, Options{})
			if err == nil {
				b.Close()
				t.Fatal("Open started a truncated file over as an empty database")
			}
			if !errors.Is(err, ErrDamaged) || !IsDamaged(err) || !strings.Contains(err.Error(), path) {
				t.Errorf("Open: %v; want ErrDamaged naming the file", err)
			}
			if st, _ := os.Stat(path); st.Size() != n {
				t.Errorf("the refused file was changed: %d bytes", st.Size())
			}
			if problems, err := CheckFile(ctx, path, 10); err != nil || len(problems) != 1 {
				t.Errorf("CheckFile = %q, %v; want one problem", problems, err)
			}
		})
	}

	t.Run("an empty file is a new database", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "empty.db")
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatalf("Open of an empty file: %v", err)
		}
		b.Close()
	})
}
