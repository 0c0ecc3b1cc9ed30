package backend

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// StreamStore is an optional capability of a [Backend]: named, ordered
// streams of chunks (bytes or text) that a run's steps write — logs,
// progress, the tokens of a model's answer — for readers to follow live.
// Both built-in backends implement it, in tables of this SDK's own
// migration line (workflow_streams, workflow_stream_chunks).
//
// Which chunks are shown. A chunk belongs to the step attempt that wrote
// it and to the claim of the run it was written in (the worker id and the
// run's attempts, its claim count, at the write). It is shown when its
// attempt is finished (completed or failed) in step_attempts, or when the
// run is, at the moment of the read, running under that same claim (the
// same worker id and the same attempts: the condition of the write fence,
// so the lease's expiry alone hides nothing). So a live reader sees chunks
// as they are written, and the chunks of an attempt that lost its run
// before it finished (its worker crashed or was cut off, and the step ran
// again elsewhere, or on the same worker under a later claim) disappear
// from the stream for good once another claim takes the run, or it is
// released, canceled or failed. A reader that saw them live has seen
// chunks the stream no longer shows; the numbers of the shown chunks then
// skip theirs.
//
// Closure. The chunk appended with Close carries the close. A stream is
// closed when a shown chunk closed it: readers end there (no chunk after
// it is shown), and appends fail with [ErrStreamClosed]. A close written by
// an attempt that lost its run is hidden with its chunks, and does not
// stop the step's next attempt from writing.
type StreamStore interface {
	// AppendChunk appends a chunk (p.Data, possibly empty, kept byte for
	// byte) to stream p.Stream of run p.WorkflowRunID, fenced like a
	// worker write (the run running and leased to p.WorkerID, else an
	// error wrapping [ErrNotOwner], or [ErrRunNotFound]), and returns its
	// sequence number: 1, 2, … per stream, in commit order (concurrent
	// appends get distinct consecutive numbers). With p.Close the chunk
	// also closes the stream. A closed stream (see StreamStore) refuses
	// the append with [ErrStreamClosed]; bad params
	// ([AppendChunkParams.Validate]) with [ErrInvalidArgument]. On any
	// error nothing is stored. Subscribers get an [EventChunk] naming the
	// run, the stream and the number after the commit.
	AppendChunk(ctx context.Context, p AppendChunkParams) (seq int64, err error)
	// ReadStream returns the shown chunks of a stream with a sequence
	// number above p.AfterSeq, oldest first, at most p.Limit of them, and
	// done: true when the stream was closed by a shown chunk and no shown
	// chunk follows the last one returned (or p.AfterSeq, when none is),
	// so the reader is at its end. An unknown stream or run is empty and
	// open. Bad params ([ReadStreamParams.Validate]) fail with
	// [ErrInvalidArgument].
	ReadStream(ctx context.Context, p ReadStreamParams) (chunks []StreamChunk, done bool, err error)
	// ListStreams returns the streams of a run, by name (byte order); an
	// unknown run has none (an empty, non-nil slice).
	ListStreams(ctx context.Context, runID string) ([]StreamInfo, error)
}

// ErrStreamClosed: an append to a stream that was closed.
var ErrStreamClosed = errors.New("stream is closed")

// StreamChunk is one chunk of a stream.
type StreamChunk struct {
	// WorkflowRunID and Stream name the stream; Seq is the chunk's place
	// in it, from 1 (the chunks shown may skip numbers: see StreamStore).
	WorkflowRunID string `json:"workflowRunId"`
	Stream        string `json:"stream"`
	Seq           int64  `json:"seq"`
	// Data is the chunk's bytes.
	Data []byte `json:"data"`
	// Closes is true for the chunk that closed the stream (the last one
	// shown). A writer's Close appends it with no data: readers that show
	// data skip such an empty closing chunk as the end mark it is.
	Closes bool `json:"closes,omitempty"`
	// StepAttemptID is the attempt that wrote it.
	StepAttemptID string `json:"stepAttemptId"`
	// CreatedAt is the write's time (UTC, milliseconds).
	CreatedAt time.Time `json:"createdAt"`
}

// StreamInfo describes one stream of a run.
type StreamInfo struct {
	// Stream is its name; Chunks how many chunks a read of it shows
	// (see StreamStore), an empty closing chunk — the mark a writer's
	// Close appends — aside, so it counts what readers show as data;
	// Closed whether a shown chunk closed it.
	Stream string `json:"stream"`
	Chunks int64  `json:"chunks"`
	Closed bool   `json:"closed"`
}

// MaxStreamNameLength is the longest stream name, in bytes;
// MaxChunkSize the largest chunk, in bytes (1 MiB).
const (
	MaxStreamNameLength = 255
	MaxChunkSize        = 1 << 20
)

// AppendChunkParams are the inputs of [StreamStore.AppendChunk].
type AppendChunkParams struct {
	// WorkflowRunID and WorkerID name the run and its leaseholder (the
	// fence); StepAttemptID the attempt writing.
	WorkflowRunID string
	WorkerID      string
	StepAttemptID string
	// Stream is the stream's name: 1 to [MaxStreamNameLength] bytes of
	// valid text.
	Stream string
	// Data is the chunk, at most [MaxChunkSize] bytes.
	Data []byte
	// Close closes the stream after this chunk.
	Close bool
}

// Validate checks p as every backend does, with errors wrapping
// [ErrInvalidArgument] that name the field: the run, worker and step
// attempt ids are required and valid text ([ValidText]), the stream name
// passes [CheckStreamName], the data is at most [MaxChunkSize] bytes (any
// bytes: a chunk is not text).
func (p AppendChunkParams) Validate() error {
	for _, f := range []struct{ field, s string }{
		{"workflow run id", p.WorkflowRunID}, {"worker id", p.WorkerID}, {"step attempt id", p.StepAttemptID},
	} {
		if f.s == "" {
			return fmt.Errorf("%w: a chunk needs a %s", ErrInvalidArgument, f.field)
		}
		if err := checkText(f.field, f.s); err != nil {
			return err
		}
	}
	if err := CheckStreamName(p.Stream); err != nil {
		return err
	}
	if len(p.Data) > MaxChunkSize {
		return fmt.Errorf("%w: a chunk of %d bytes is larger than %d", ErrInvalidArgument, len(p.Data), MaxChunkSize)
	}
	return nil
}

// CheckStreamName checks a stream name: 1 to [MaxStreamNameLength] bytes
// of valid text. The error wraps [ErrInvalidArgument].
func CheckStreamName(name string) error {
	if name == "" || len(name) > MaxStreamNameLength {
		return fmt.Errorf("%w: a stream name is 1 to %d bytes, got %d", ErrInvalidArgument, MaxStreamNameLength, len(name))
	}
	return checkText("stream name", name)
}

// ReadStreamParams are the inputs of [StreamStore.ReadStream].
type ReadStreamParams struct {
	// WorkflowRunID and Stream name the stream.
	WorkflowRunID string
	Stream        string
	// AfterSeq returns only chunks after it (0: from the start).
	AfterSeq int64
	// Limit is the most chunks returned; 0 means [DefaultPageSize], above
	// [MaxPageSize] fails with [ErrInvalidArgument].
	Limit int
	// MaxBytes, when positive, stops reading at the first chunk that takes
	// the bytes of the chunks read beyond MaxBytes ([PageBudget]): that
	// chunk is the last returned, so that a caller keeping to the same
	// budget ends its page before it and knows that more follow. Memory
	// is then bounded by MaxBytes plus one chunk ([MaxChunkSize]), however
	// large Limit. 0: no bound but Limit.
	MaxBytes int
}

// Validate checks p as every backend does, with errors wrapping
// [ErrInvalidArgument] that name the field: a run id of valid text, a
// stream name passing [CheckStreamName], AfterSeq not negative, Limit from
// 0 to [MaxPageSize] ([ResolvePage] gives the page size to use).
func (p ReadStreamParams) Validate() error {
	if p.WorkflowRunID == "" {
		return fmt.Errorf("%w: a stream read needs a workflow run id", ErrInvalidArgument)
	}
	if err := checkText("workflow run id", p.WorkflowRunID); err != nil {
		return err
	}
	if err := CheckStreamName(p.Stream); err != nil {
		return err
	}
	if p.AfterSeq < 0 {
		return fmt.Errorf("%w: negative AfterSeq %d", ErrInvalidArgument, p.AfterSeq)
	}
	_, _, _, err := ResolvePage(p.Limit, "", "")
	return err
}

// StreamDone is how a backend computes ReadStream's done from a page of
// chunks read after afterSeq and the number of the stream's first shown
// close (nil: open): the reader is at the end when the close is the last
// chunk returned, or was at or before afterSeq when none is.
func StreamDone(chunks []StreamChunk, afterSeq int64, closeSeq *int64) bool {
	if closeSeq == nil {
		return false
	}
	last := afterSeq
	if len(chunks) > 0 {
		last = chunks[len(chunks)-1].Seq
	}
	return last >= *closeSeq
}
