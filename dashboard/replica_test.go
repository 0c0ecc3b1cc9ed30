package dashboard_test

// The dashboard with a read replica (a real streaming replica the test
// starts): a visitor who acts sees the outcome of the action on the next
// page although the replica has not replayed it (its replay is paused),
// while a visitor who did not act sees the replica's view.

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/internal/pgcluster"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
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
	s := newSite(t, b, siteOptions{noWorker: true})
	id := s.start("replicated", 1)
	s.until("the replica to replay the run", func() bool { st := b.ReplicaStatus(); return st.Up && st.LagBytes == 0 })

	c.PauseReplay(ctx)
	actor, other := s.client(), s.client()
	p := s.must(actor, http.StatusSeeOther, "POST", "/runs/"+id+"/cancel", url.Values{}, "Sec-Fetch-Site", "same-origin", "Origin", s.url)
	var token string
	for _, ck := range (&http.Response{Header: p.header}).Cookies() {
		if ck.Name == api.ReadAfterCookie {
			token = ck.Value
		}
	}
	if _, err := postgres.ParseLSN(token); err != nil {
		t.Fatalf("the cancel's answer sets %s=%q: %v", api.ReadAfterCookie, token, err)
	}
	mine := s.must(actor, http.StatusOK, "GET", "/runs/"+id, nil).body
	theirs := s.must(other, http.StatusOK, "GET", "/runs/"+id, nil).body
	if !strings.Contains(mine, `badge s-canceled`) {
		t.Errorf("the visitor who canceled the run does not see it canceled")
	}
	if !strings.Contains(theirs, `badge s-pending`) {
		t.Errorf("another visitor's page was not served by the paused replica (it does not show the run pending):\n%s", theirs)
	}
	c.ResumeReplay(ctx)
}
