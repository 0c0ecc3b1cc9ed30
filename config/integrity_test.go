package config

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
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
)

func TestExplainErrorTellsADamagedFileFromAMissingRow(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ow.db")
	c, err := LoadWith(Options{Dir: t.TempDir(), Overrides: Overrides{SQLitePath: &path}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "w", Input: []byte(`"` + strings.Repeat("x", 500) + `"`)}); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	noRow := fmt.Errorf("create workflow run: %w", sql.ErrNoRows)
	other := errors.New("context deadline exceeded")

	if got := c.ExplainError(ctx, noRow); got != noRow {
		t.Errorf("a missing row in a sound file became %q", got)
	}
	if problems, checked, err := c.CheckIntegrity(ctx); err != nil || !checked || problems != nil {
		t.Fatalf("CheckIntegrity of a sound file = %q, %v, %v", problems, checked, err)
	}

	// Damage the last page.
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, st.Size()-4096); err != nil {
		t.Fatal(err)
	}
	got := c.ExplainError(ctx, noRow)
	if !errors.Is(got, sql.ErrNoRows) || !strings.Contains(got.Error(), "is damaged") || !strings.Contains(got.Error(), "move it aside") {
		t.Errorf("a missing row in a damaged file: %q; want it explained, wrapping the cause", got)
	}
	if again := c.ExplainError(ctx, got); again != got {
		t.Errorf("an explained error is explained again: %q", again)
	}
	if got := c.ExplainError(ctx, other); got != other {
		t.Errorf("an unrelated error became %q", got)
	}
	if err := c.RequireIntact(ctx); err == nil || !strings.Contains(err.Error(), "is damaged") {
		t.Errorf("RequireIntact of a damaged file: %v", err)
	}

	pg := "postgres://u@h/db"
	cp, err := LoadWith(Options{Dir: t.TempDir(), Overrides: Overrides{PostgresURL: &pg}})
	if err != nil {
		t.Fatal(err)
	}
	if got := cp.ExplainError(ctx, noRow); got != noRow {
		t.Errorf("on PostgreSQL the error became %q", got)
	}
}
