package postgres_test

// Read replicas against a real streaming replica the test starts itself
// (internal/pgcluster: initdb, pg_basebackup -R, as the postgres user).
// Which server answered is told by what it answers: while the replica's
// replay is paused it does not have the runs created since, the primary
// does.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/internal/pgcluster"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
)

func openWithReplica(t *testing.T, c *pgcluster.Cluster, schema string, maxLag time.Duration) *postgres.Backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := postgres.Open(ctx, c.PrimaryURL, postgres.Options{Schema: schema, ReadReplicaURL: c.ReplicaURL,
		ReplicaMaxLag: maxLag, ReplicaCheckInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// waitStatus polls the replica's status until ok accepts it.
func waitStatus(t *testing.T, b *postgres.Backend, what string, ok func(backend.ReplicaStatus) bool) backend.ReplicaStatus {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := b.ReplicaStatus()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 60 s for %s; status %+v", what, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestReadReplica(t *testing.T) {
	if pgtest.Skipped() {
		t.Skip("OPENWORKFLOW_SKIP_POSTGRES=1")
	}
	c := pgcluster.StartCluster(t)
	ctx := t.Context()
	b := openWithReplica(t, c, "ow_replica", time.Hour)
	strict := openWithReplica(t, c, "ow_replica", 200*time.Millisecond)

	if !b.HasReadReplica() {
		t.Fatal("HasReadReplica() = false with ReadReplicaURL set")
	}
	first, err := b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "wf"})
	if err != nil {
		t.Fatal(err)
	}
	// Caught up as measured by a check that began after the first run was
	// committed: one that ended before the next check began, so a status
	// measured before the commit (lag 0, without the run) is not taken.
	created := time.Now()
	for _, rb := range []*postgres.Backend{b, strict} {
		after := waitStatus(t, rb, "a check of the replica after the first run", func(s backend.ReplicaStatus) bool { return s.CheckedAt.After(created) })
		waitStatus(t, rb, "the replica to replay the schema and the first run", func(s backend.ReplicaStatus) bool {
			return s.Up && s.LagBytes == 0 && s.CheckedAt.After(after.CheckedAt)
		})
	}

	c.PauseReplay(ctx)
	second, err := b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "wf"})
	if err != nil {
		t.Fatal(err)
	}
	token, err := b.ReadAfter(ctx)
	if err != nil || token == "" {
		t.Fatalf("ReadAfter = %q, %v", token, err)
	}
	lagging := waitStatus(t, b, "a lag in bytes while replay is paused", func(s backend.ReplicaStatus) bool { return s.LagBytes > 0 })

	t.Run("marked reads are served by the replica", func(t *testing.T) {
		before := b.ReplicaStatus()
		marked := backend.WithReplicaReads(ctx, "")
		if _, err := b.GetWorkflowRun(marked, second.ID); !errors.Is(err, backend.ErrRunNotFound) {
			t.Fatalf("a marked get of a run the paused replica has not replayed: err %v, want ErrRunNotFound (served by the replica)", err)
		}
		if _, err := b.GetWorkflowRun(marked, first.ID); err != nil {
			t.Fatalf("a marked get of a replayed run: %v", err)
		}
		page, err := b.ListWorkflowRuns(marked, backend.ListWorkflowRunsParams{})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Data) != 1 || page.Data[0].ID != first.ID {
			t.Fatalf("a marked list shows %d runs, want the 1 the replica replayed", len(page.Data))
		}
		counts, err := b.CountWorkflowRuns(marked)
		if err != nil {
			t.Fatal(err)
		}
		if counts.Pending != 1 {
			t.Fatalf("a marked count says %d pending, want the replica's 1", counts.Pending)
		}
		after := b.ReplicaStatus()
		if got := after.ReplicaReads - before.ReplicaReads; got != 4 {
			t.Fatalf("replica reads went up by %d, want 4", got)
		}
	})

	t.Run("unmarked reads (workers, the client) go to the primary", func(t *testing.T) {
		if _, err := b.GetWorkflowRun(ctx, second.ID); err != nil {
			t.Fatalf("an unmarked get of the new run: %v (the primary has it)", err)
		}
		page, err := b.ListWorkflowRuns(ctx, backend.ListWorkflowRunsParams{})
		if err != nil || len(page.Data) != 2 {
			t.Fatalf("an unmarked list: %d runs, %v; want 2 from the primary", len(page.Data), err)
		}
	})

	t.Run("read-your-writes: a read presenting its write's token goes to the primary until the replica replayed it", func(t *testing.T) {
		before := b.ReplicaStatus()
		run, err := b.GetWorkflowRun(backend.WithReplicaReads(ctx, token), second.ID)
		if err != nil || run.ID != second.ID {
			t.Fatalf("a read after the write: %v", err)
		}
		if got := b.ReplicaStatus().PrimaryReads - before.PrimaryReads; got != 1 {
			t.Fatalf("primary reads went up by %d, want 1", got)
		}
		if _, err := b.GetWorkflowRun(backend.WithReplicaReads(ctx, "not/an-lsn"), second.ID); err != nil {
			t.Fatalf("a read with a token that is not a WAL position goes to the primary: %v", err)
		}
	})

	t.Run("lag beyond the bound sends marked reads to the primary", func(t *testing.T) {
		s := waitStatus(t, strict, "the lag in seconds to pass 200 ms", func(s backend.ReplicaStatus) bool { return s.LagSeconds > 0.2 })
		if s.LagBytes <= 0 {
			t.Fatalf("lag %v s but %d bytes", s.LagSeconds, s.LagBytes)
		}
		if _, err := strict.GetWorkflowRun(backend.WithReplicaReads(ctx, ""), second.ID); err != nil {
			t.Fatalf("a marked read with the replica %v s behind (bound 200 ms): %v, want it served by the primary", s.LagSeconds, err)
		}
	})

	c.ResumeReplay(ctx)
	t.Run("once replayed, the read-after read goes to the replica", func(t *testing.T) {
		// A status measured while replay was paused shows a lag, so lag 0
		// is a check made since replay resumed.
		waitStatus(t, b, "the replica to catch up", func(s backend.ReplicaStatus) bool { return s.Up && s.LagBytes == 0 })
		before := b.ReplicaStatus()
		if _, err := b.GetWorkflowRun(backend.WithReplicaReads(ctx, token), second.ID); err != nil {
			t.Fatal(err)
		}
		if got := b.ReplicaStatus().ReplicaReads - before.ReplicaReads; got != 1 {
			t.Fatalf("replica reads went up by %d, want 1", got)
		}
	})
	t.Logf("lag seen while paused: %.3f s, %d bytes", lagging.LagSeconds, lagging.LagBytes)

	t.Run("a replica that is down: reads fall back to the primary", func(t *testing.T) {
		c.StopReplica()
		third, err := b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "wf"})
		if err != nil {
			t.Fatal(err)
		}
		// Before the monitor noticed: the read fails on the replica and is
		// retried on the primary.
		if _, err := b.GetWorkflowRun(backend.WithReplicaReads(ctx, ""), third.ID); err != nil {
			t.Fatalf("a marked read with the replica stopped: %v", err)
		}
		s := waitStatus(t, b, "the monitor to see the replica down", func(s backend.ReplicaStatus) bool { return !s.Up })
		if s.Error == "" {
			t.Fatal("the replica is down but the status has no error")
		}
		if n, err := b.CountMatchingRuns(backend.WithReplicaReads(ctx, ""), backend.ListWorkflowRunsParams{}); err != nil || n != 3 {
			t.Fatalf("a marked count with the replica down: %d, %v; want 3 from the primary", n, err)
		}
	})
}

func TestParseLSN(t *testing.T) {
	for in, want := range map[string]uint64{"0/0": 0, "0/16B3740": 0x16B3740, "16/B374D848": 0x16_B374D848, "FFFFFFFF/FFFFFFFF": ^uint64(0)} {
		if got, err := postgres.ParseLSN(in); err != nil || got != want {
			t.Errorf("ParseLSN(%q) = %x, %v; want %x", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "/1", "1/", "g/0", "1/2/3", "100000000/0", "-1/0"} {
		if _, err := postgres.ParseLSN(in); !errors.Is(err, backend.ErrInvalidArgument) {
			t.Errorf("ParseLSN(%q): err %v, want ErrInvalidArgument", in, err)
		}
	}
}
