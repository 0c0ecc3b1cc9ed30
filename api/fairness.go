package api

import (
	"net/http"

	"github.com/openworkflow-go/openworkflow/backend"
)

// FairQueueList is the answer of GET /v1/fair-queues: a page of the
// namespace's fairness keys, in key order, with the namespace's virtual
// time (the highest pass a claim took; a key's next run is claimed about
// when it reaches the key's next pass).
type FairQueueList struct {
	List[backend.FairQueue]
	VTime int64 `json:"vtime"`
}

// listFairQueues answers a page of the per-key queues of fair shares
// (backend.FairQueueLister): ?limit (default 100), ?cursor (the previous
// page's).
func (h *Handler) listFairQueues(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r, "limit", "cursor")
	if err != nil {
		return err
	}
	limit, err := q.limit(backend.DefaultPageSize)
	if err != nil {
		return err
	}
	l, ok := h.c.Backend().(backend.FairQueueLister)
	if !ok {
		return asAPIError(backend.ErrNotSupported, "")
	}
	page, err := l.ListFairQueues(r.Context(), backend.ListFairQueuesParams{Limit: limit, After: q.str("cursor")})
	if err != nil {
		return asAPIError(err, "")
	}
	out := FairQueueList{List: listOf(page.Queues, page.Next, func(q *backend.FairQueue) backend.FairQueue { return *q }), VTime: page.VTime}
	writeJSON(w, http.StatusOK, out)
	return nil
}
