package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
)

var _ backend.StreamStore = (*Backend)(nil)

// AppendChunk implements [backend.StreamStore] with one statement
// (append_chunk in sql/streams.sql: the fence, the stream's counter, the
// chunk and its notification), so a chunk costs one round trip and one
// commit, and reaches subscribers through the listener as soon as it
// commits.
func (b *Backend) AppendChunk(ctx context.Context, p backend.AppendChunkParams) (int64, error) {
	if err := p.Validate(); err != nil {
		return 0, fmt.Errorf("append to stream %q: %w", p.Stream, err)
	}
	data := p.Data
	if data == nil {
		data = []byte{} // NOT NULL: an empty chunk is zero bytes
	}
	var owned bool
	var seq *int64
	err := b.pool.QueryRow(ctx, b.q.AppendChunk, b.namespace, p.WorkflowRunID, p.WorkerID, p.Stream,
		p.StepAttemptID, data, p.Close, b.at()).Scan(&owned, &seq)
	switch {
	case err != nil:
		return 0, fmt.Errorf("append to stream %q of workflow run %s: %w", p.Stream, p.WorkflowRunID, err)
	case !owned:
		return 0, b.fenceError(ctx, fmt.Sprintf("append to stream %q", p.Stream), p.WorkflowRunID, p.WorkerID)
	case seq == nil:
		return 0, fmt.Errorf("append to stream %q of workflow run %s: %w", p.Stream, p.WorkflowRunID, backend.ErrStreamClosed)
	}
	return *seq, nil
}

// ReadStream implements [backend.StreamStore] with one statement
// (read_stream): the page of shown chunks and the stream's first shown
// close, read in one snapshot.
func (b *Backend) ReadStream(ctx context.Context, p backend.ReadStreamParams) ([]backend.StreamChunk, bool, error) {
	if err := p.Validate(); err != nil {
		return nil, false, fmt.Errorf("read stream %q: %w", p.Stream, err)
	}
	limit, _, _, _ := backend.ResolvePage(p.Limit, "", "")
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rows, err := b.pool.Query(qctx, b.q.ReadStream, b.namespace, p.WorkflowRunID, p.Stream, p.AfterSeq, limit)
	if err != nil {
		return nil, false, fmt.Errorf("read stream %q of workflow run %s: %w", p.Stream, p.WorkflowRunID, err)
	}
	chunks, closeSeq, err := readStreamRows(rows, cancel, p)
	if err != nil {
		return nil, false, fmt.Errorf("read stream %q of workflow run %s: %w", p.Stream, p.WorkflowRunID, err)
	}
	return chunks, backend.StreamDone(chunks, p.AfterSeq, closeSeq), nil
}

// readStreamRows scans read_stream's rows: the first shown close (the
// same on every row) and the page's chunks (absent on the one row of an
// empty page). Stopping at p.MaxBytes calls cancel, as collectPage does.
func readStreamRows(rows pgx.Rows, cancel context.CancelFunc, p backend.ReadStreamParams) ([]backend.StreamChunk, *int64, error) {
	defer rows.Close()
	chunks := []backend.StreamChunk{}
	var closeSeq *int64
	budget := backend.PageBudget{Max: p.MaxBytes}
	for rows.Next() {
		var seq *int64
		var data []byte
		var attempt *string
		var created *time.Time
		if err := rows.Scan(&closeSeq, &seq, &data, &attempt, &created); err != nil {
			return nil, nil, err
		}
		if seq == nil {
			continue
		}
		c := backend.StreamChunk{WorkflowRunID: p.WorkflowRunID, Stream: p.Stream, Seq: *seq, Data: data,
			Closes: closeSeq != nil && *closeSeq == *seq}
		if c.Data == nil {
			c.Data = []byte{}
		}
		if attempt != nil {
			c.StepAttemptID = *attempt
		}
		if created != nil {
			c.CreatedAt = created.UTC()
		}
		chunks = append(chunks, c)
		if !budget.Fits(len(c.Data)) {
			cancel() // the chunk beyond the budget: the caller's page ends before it
			return chunks, closeSeq, nil
		}
	}
	return chunks, closeSeq, rows.Err()
}

// ListStreams implements [backend.StreamStore].
func (b *Backend) ListStreams(ctx context.Context, runID string) ([]backend.StreamInfo, error) {
	if !backend.ValidText(runID) {
		return []backend.StreamInfo{}, nil
	}
	rows, err := b.pool.Query(ctx, b.q.ListStreams, b.namespace, runID)
	if err != nil {
		return nil, fmt.Errorf("list streams of workflow run %s: %w", runID, err)
	}
	ss, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (backend.StreamInfo, error) {
		var s backend.StreamInfo
		err := row.Scan(&s.Stream, &s.Chunks, &s.Closed)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("list streams of workflow run %s: %w", runID, err)
	}
	if ss == nil {
		ss = []backend.StreamInfo{}
	}
	return ss, nil
}
