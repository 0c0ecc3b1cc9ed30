package api_test

// The API with a read replica (a real streaming replica the test starts):
// reads without a token are served by the replica, a caller reads its own
// write back through the token its write's answer carried (header or
// cookie), and /metrics shows the replica's lag.

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/internal/pgcluster"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
	"github.com/openworkflow-go/openworkflow/metrics"
)

func TestReadReplicaReadYourWrites(t *testing.T) {
	if pgtest.Skipped() {
		t.Skip("OPENWORKFLOW_SKIP_POSTGRES=1")
	}
	c := pgcluster.StartCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := postgres.Open(ctx, c.PrimaryURL, postgres.Options{ReadReplicaURL: c.ReplicaURL, ReplicaMaxLag: time.Hour, ReplicaCheckInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	s := newServer(t, b, api.Options{})
	s.until("the replica to replay the schema", func() bool { st := b.ReplicaStatus(); return st.Up && st.LagBytes == 0 })

	// A read: no token is handed out (nothing was written).
	if r := s.must(http.StatusOK, "GET", "/v1/runs", nil); r.header.Get(api.ReadAfterHeader) != "" {
		t.Errorf("a GET answered with %s %q", api.ReadAfterHeader, r.header.Get(api.ReadAfterHeader))
	}

	c.PauseReplay(ctx)
	body := map[string]any{"workflowName": "echo", "input": 1}
	w := s.must(http.StatusCreated, "POST", "/v1/runs", body)
	var run api.Run
	w.decode(t, &run)
	token := w.header.Get(api.ReadAfterHeader)
	if _, err := postgres.ParseLSN(token); err != nil {
		t.Fatalf("the write's answer carries %s %q: %v", api.ReadAfterHeader, token, err)
	}
	var cookie *http.Cookie
	for _, ck := range (&http.Response{Header: w.header}).Cookies() {
		if ck.Name == api.ReadAfterCookie {
			cookie = ck
		}
	}
	if cookie == nil || cookie.Value != token || !cookie.HttpOnly {
		t.Fatalf("the write's answer sets cookie %+v, want %s=%s HttpOnly", cookie, api.ReadAfterCookie, token)
	}

	// Without the token: the paused replica answers, and has no such run.
	if r := s.do("GET", "/v1/runs/"+run.ID, nil); r.status != http.StatusNotFound {
		t.Fatalf("GET without the token answered %d, want 404 from the paused replica: %s", r.status, r.body)
	}
	// With it, by header or by cookie: the primary answers.
	s.must(http.StatusOK, "GET", "/v1/runs/"+run.ID, nil, api.ReadAfterHeader, token)
	s.must(http.StatusOK, "GET", "/v1/runs/"+run.ID, nil, "Cookie", api.ReadAfterCookie+"="+token)
	// A token that is not a WAL position (or is too long) is the primary's.
	s.must(http.StatusOK, "GET", "/v1/runs/"+run.ID, nil, api.ReadAfterHeader, strings.Repeat("9", 100))

	m, err := metrics.New(metrics.Options{Client: s.c})
	if err != nil {
		t.Fatal(err)
	}
	s.until("the lag to show in /metrics", func() bool {
		fams, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			if f.GetName() == "openworkflow_replica_lag_bytes" && f.GetMetric()[0].GetGauge().GetValue() > 0 {
				return true
			}
		}
		return false
	})

	c.ResumeReplay(ctx)
	s.until("the replica to catch up", func() bool { return b.ReplicaStatus().LagBytes == 0 })
	before := b.ReplicaStatus().ReplicaReads
	s.must(http.StatusOK, "GET", "/v1/runs/"+run.ID, nil, api.ReadAfterHeader, token)
	if got := b.ReplicaStatus().ReplicaReads - before; got != 1 {
		t.Fatalf("after the replica caught up, the read with the token was served by the replica %d times, want 1", got)
	}
	var _ backend.ReadReplicas = b
}
