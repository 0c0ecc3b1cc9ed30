package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

var _ backend.StreamStore = (*Backend)(nil)

// AppendChunk implements [backend.StreamStore] in one BEGIN IMMEDIATE
// transaction (sql/streams.sql): the fence (which reads the run's claim),
// the closure check, the stream's counter, the chunk. Subscribers of this
// process get its EventChunk once it committed.
func (b *Backend) AppendChunk(ctx context.Context, p backend.AppendChunkParams) (int64, error) {
	if err := p.Validate(); err != nil {
		return 0, fmt.Errorf("append to stream %q: %w", p.Stream, err)
	}
	data := p.Data
	if data == nil {
		data = []byte{} // NOT NULL: an empty chunk is zero bytes
	}
	var seq int64
	err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		var attempts int64
		err := tx.QueryRowContext(ctx, b.q.OwnedRunClaim, sql.Named("ns", b.ns),
			sql.Named("run_id", p.WorkflowRunID), sql.Named("worker_id", p.WorkerID)).Scan(&attempts)
		if errors.Is(err, sql.ErrNoRows) {
			return missingRunNotOwned(b.fenceError(ctx, tx, p.WorkflowRunID))
		}
		if err != nil {
			return err
		}
		var closed bool
		if err := tx.QueryRowContext(ctx, b.q.StreamClosed, sql.Named("ns", b.ns), sql.Named("run_id", p.WorkflowRunID),
			sql.Named("stream", p.Stream)).Scan(&closed); err != nil {
			return err
		}
		if closed {
			return backend.ErrStreamClosed
		}
		if err := tx.QueryRowContext(ctx, b.q.BumpStream, sql.Named("ns", b.ns), sql.Named("run_id", p.WorkflowRunID),
			sql.Named("stream", p.Stream), sql.Named("now", timeArg(now))).Scan(&seq); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, b.q.InsertChunk, sql.Named("ns", b.ns), sql.Named("run_id", p.WorkflowRunID),
			sql.Named("stream", p.Stream), sql.Named("seq", seq), sql.Named("data", data), sql.Named("closes", p.Close),
			sql.Named("step_id", p.StepAttemptID), sql.Named("worker_id", p.WorkerID),
			sql.Named("run_attempts", attempts), sql.Named("now", timeArg(now))); err != nil {
			return err
		}
		ev.chunk(b.ns, p.WorkflowRunID, p.Stream, seq)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("append to stream %q of workflow run %s: %w", p.Stream, p.WorkflowRunID, err)
	}
	return seq, nil
}

// ReadStream implements [backend.StreamStore] with one statement
// (read_stream): the page of shown chunks and the stream's first shown
// close, read in one snapshot.
func (b *Backend) ReadStream(ctx context.Context, p backend.ReadStreamParams) ([]backend.StreamChunk, bool, error) {
	if err := p.Validate(); err != nil {
		return nil, false, fmt.Errorf("read stream %q: %w", p.Stream, err)
	}
	limit, _, _, _ := backend.ResolvePage(p.Limit, "", "")
	var chunks []backend.StreamChunk
	var closeSeq *int64
	err := b.read(ctx, func() error {
		chunks, closeSeq = []backend.StreamChunk{}, nil
		budget := backend.PageBudget{Max: p.MaxBytes}
		rows, err := b.reader().QueryContext(ctx, b.q.ReadStream, sql.Named("ns", b.ns), sql.Named("run_id", p.WorkflowRunID),
			sql.Named("stream", p.Stream), sql.Named("after_seq", p.AfterSeq), sql.Named("limit", limit))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var closing, seq sql.NullInt64
			var data []byte
			var attempt, created sql.NullString
			if err := rows.Scan(&closing, &seq, &data, &attempt, &created); err != nil {
				return err
			}
			if closing.Valid {
				closeSeq = &closing.Int64
			}
			if !seq.Valid {
				continue
			}
			c := backend.StreamChunk{WorkflowRunID: p.WorkflowRunID, Stream: p.Stream, Seq: seq.Int64,
				Data: append([]byte{}, data...), StepAttemptID: attempt.String,
				Closes: closing.Valid && closing.Int64 == seq.Int64}
			if c.CreatedAt, err = backend.ParseTime(created.String); err != nil {
				return fmt.Errorf("chunk %d: created_at: %w", c.Seq, err)
			}
			chunks = append(chunks, c)
			if !budget.Fits(len(c.Data)) {
				break // the chunk beyond the budget: the caller's page ends before it
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, false, fmt.Errorf("read stream %q of workflow run %s: %w", p.Stream, p.WorkflowRunID, err)
	}
	return chunks, backend.StreamDone(chunks, p.AfterSeq, closeSeq), nil
}

// ListStreams implements [backend.StreamStore].
func (b *Backend) ListStreams(ctx context.Context, runID string) ([]backend.StreamInfo, error) {
	var ss []backend.StreamInfo
	err := b.read(ctx, func() error {
		ss = []backend.StreamInfo{}
		rows, err := b.reader().QueryContext(ctx, b.q.ListStreams, sql.Named("ns", b.ns), sql.Named("run_id", runID))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s backend.StreamInfo
			if err := rows.Scan(&s.Stream, &s.Chunks, &s.Closed); err != nil {
				return err
			}
			ss = append(ss, s)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list streams of workflow run %s: %w", runID, err)
	}
	return ss, nil
}
