package postgres

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
)

// fairArrays returns the arguments of set_fairness for the runs ids[k] of
// ps[idx[k]] that have fairness, in the order of idx; ok is false when
// none has.
func fairArrays(ids []string, ps []backend.CreateWorkflowRunParams, idx []int) (fairIDs, keys []string, weights []float64, ok bool) {
	for k, i := range idx {
		if f := ps[i].Fairness; f != nil {
			n := f.Normalized()
			fairIDs, keys, weights = append(fairIDs, ids[k]), append(keys, n.Key), append(weights, n.Weight)
		}
	}
	return fairIDs, keys, weights, len(fairIDs) > 0
}

// queueSetFairness queues set_fairness on batch once per run of
// fairArrays' result, ordered by key then id, and returns how many
// statements it queued. One statement per run, because the enqueue
// trigger gives each row the next pass of its key in the order the
// UPDATE happens to visit the rows, which a multi-row UPDATE does not fix
// (a hash join visits them in any order): run by run, a key's runs get
// increasing passes in id order, so a burst started in one call is
// claimed first started first. Ordered by key, concurrent starts lock
// the keys' rows in one order and cannot deadlock on them. The batch is
// still one round trip.
func queueSetFairness(batch *pgx.Batch, stmt, ns string, ids, keys []string, weights []float64, at any) int {
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, c int) bool {
		if keys[order[a]] != keys[order[c]] {
			return keys[order[a]] < keys[order[c]]
		}
		return ids[order[a]] < ids[order[c]]
	})
	for _, i := range order {
		batch.Queue(stmt, ns, ids[i:i+1], keys[i:i+1], weights[i:i+1], at)
	}
	return len(order)
}

// markFair puts the just inserted run of p under its fairness (set_fairness,
// in the inserting transaction q) and returns it as it now is; run itself
// when p has none.
func (b *Backend) markFair(ctx context.Context, q querier, run *backend.WorkflowRun, p backend.CreateWorkflowRunParams) (*backend.WorkflowRun, error) {
	ids, keys, weights, ok := fairArrays([]string{run.ID}, []backend.CreateWorkflowRunParams{p}, []int{0})
	if !ok {
		return run, nil
	}
	marked, err := queryRun(ctx, q, b.q.SetFairness, b.namespace, ids, keys, weights, b.at())
	if err != nil {
		return nil, fmt.Errorf("put run %s under fair shares (key %q): %w", run.ID, keys[0], err)
	}
	return marked, nil
}

// ListFairQueues implements [backend.FairQueueLister]: a page of the
// namespace's fairness keys (list_fair_queues), with its virtual time.
func (b *Backend) ListFairQueues(ctx context.Context, p backend.ListFairQueuesParams) (*backend.FairQueues, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = backend.DefaultPageSize
	}
	rows, err := b.pool.Query(ctx, b.q.ListFairQueues, b.namespace, p.After, limit+1)
	if err != nil {
		return nil, fmt.Errorf("list fair queues: %w", err)
	}
	out := &backend.FairQueues{Queues: []backend.FairQueue{}}
	vtime, err := b.vtime(ctx)
	if err != nil {
		rows.Close()
		return nil, err
	}
	out.VTime = vtime
	_, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) {
		q, err := scanFairQueue(row)
		out.Queues = append(out.Queues, q)
		return struct{}{}, err
	})
	if err != nil {
		return nil, fmt.Errorf("list fair queues: %w", err)
	}
	if len(out.Queues) > limit {
		out.Queues = out.Queues[:limit]
		next := out.Queues[limit-1].Key
		out.Next = &next
	}
	return out, nil
}

// vtime reads the namespace's virtual time (0 before any fair claim).
func (b *Backend) vtime(ctx context.Context) (int64, error) {
	var v int64
	if err := b.pool.QueryRow(ctx, b.q.FairVTime, b.namespace).Scan(&v); err != nil {
		return 0, fmt.Errorf("read the fair shares' virtual time: %w", err)
	}
	return v, nil
}

// scanFairQueue reads one row of list_fair_queues.
func scanFairQueue(row pgx.CollectableRow) (q backend.FairQueue, err error) {
	var queued, running int64
	var oldest *time.Time
	err = row.Scan(&q.Key, &q.Weight, &q.LastPass, &q.UpdatedAt, &queued, &q.NextPass, &oldest, &running)
	q.Queued, q.Running = int(queued), int(running)
	if oldest != nil {
		t := oldest.UTC()
		q.OldestQueuedAt = &t
	}
	q.UpdatedAt = q.UpdatedAt.UTC()
	return q, err
}
