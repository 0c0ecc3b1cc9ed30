package openworkflow

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// ErrStreamClosed is returned by a write to a stream that was closed
// (re-exported from package backend).
var ErrStreamClosed = backend.ErrStreamClosed

// stepScope is what a step function's context carries: the pass and the
// attempt executing, so that the function can write to its run's streams.
type stepScope struct {
	x         *pass
	attemptID string

	mu   sync.Mutex
	done bool // the step returned: its writers refuse further writes
}

type stepScopeKey struct{}

func withStepScope(ctx context.Context, s *stepScope) context.Context {
	return context.WithValue(ctx, stepScopeKey{}, s)
}

func (s *stepScope) end() {
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
}

// StreamWriter writes chunks to one named stream of the running workflow
// run (see [OpenStream]). Each Write is one chunk, durable when Write
// returns; wrap the writer in a bufio.Writer to send fewer, larger
// chunks. It is safe for concurrent use, chunks being ordered as their
// writes return.
type StreamWriter struct {
	scope *stepScope
	name  string
	st    backend.StreamStore
}

// OpenStream returns a writer to stream name (1 to 255 bytes of text) of
// the run whose step is executing: ctx must be the context a step function
// ([Run], [Go]) received, else the error is [ErrNotInWorkflow]. Readers
// follow the stream with [Client.TailStream], the API's
// GET /v1/runs/{id}/streams/{name} or `ow runs tail`.
//
// Chunks belong to the step attempt that wrote them: if the attempt loses
// its lease before it finishes (its worker crashed or was cut off), they
// are dropped from the stream, and the step's next attempt writes again —
// so readers never see the output of an attempt twice. A step writes its
// chunks as the work goes; a workflow's replay does not write them again.
// The backend must implement backend.StreamStore (both built-in ones do),
// else the error wraps backend.ErrNotSupported.
func OpenStream(ctx context.Context, name string) (*StreamWriter, error) {
	s, _ := ctx.Value(stepScopeKey{}).(*stepScope)
	if s == nil {
		return nil, fmt.Errorf("open stream %q: %w: call it with the context of a step function", name, ErrNotInWorkflow)
	}
	if err := backend.CheckStreamName(name); err != nil {
		return nil, fmt.Errorf("open stream: %w", err)
	}
	st, ok := s.x.b.(backend.StreamStore)
	if !ok {
		return nil, fmt.Errorf("open stream %q: %w: the backend has no streams", name, backend.ErrNotSupported)
	}
	return &StreamWriter{scope: s, name: name, st: st}, nil
}

// Write appends p as one chunk (at most 1 MiB: backend.MaxChunkSize) and
// returns len(p) once it is stored. It fails with [ErrStreamClosed] after
// [StreamWriter.Close], with [ErrLeaseLost] if the run is no longer this
// worker's (the step's context is canceled then too), and with an error
// naming the step once the step has returned.
func (w *StreamWriter) Write(p []byte) (int, error) {
	if err := w.append(p, false); err != nil {
		return 0, err
	}
	return len(p), nil
}

// WriteString appends s as one chunk, as Write does.
func (w *StreamWriter) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

// Close closes the stream: readers reach its end, and later writes by any
// step fail with [ErrStreamClosed]. A stream left open simply has no end
// yet; readers of a finished run stop at its last chunk.
func (w *StreamWriter) Close() error { return w.append(nil, true) }

func (w *StreamWriter) append(p []byte, closing bool) error {
	s := w.scope
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done {
		return fmt.Errorf("stream %q: the step that opened it has returned; write from within the step function", w.name)
	}
	x := s.x
	if x.isLost() {
		return fmt.Errorf("stream %q: %w", w.name, ErrLeaseLost)
	}
	_, err := w.st.AppendChunk(x.ctx, backend.AppendChunkParams{
		WorkflowRunID: x.run.ID, WorkerID: x.workerID, StepAttemptID: s.attemptID,
		Stream: w.name, Data: p, Close: closing,
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, backend.ErrStreamClosed), errors.Is(err, backend.ErrInvalidArgument):
		return fmt.Errorf("stream %q: %w", w.name, err)
	default:
		return x.backendErr(fmt.Sprintf("write to stream %q", w.name), err)
	}
}

// ListStreams returns the streams of run runID, by name. The backend must
// implement backend.StreamStore, else the error wraps
// backend.ErrNotSupported.
func (c *Client) ListStreams(ctx context.Context, runID string) ([]backend.StreamInfo, error) {
	st, err := c.streams()
	if err != nil {
		return nil, err
	}
	return st.ListStreams(ctx, runID)
}

// ReadStream returns one page of a stream's chunks after p.AfterSeq, and
// whether the reader reached its end (the stream was closed). See
// backend.StreamStore for which chunks are shown.
func (c *Client) ReadStream(ctx context.Context, p backend.ReadStreamParams) ([]backend.StreamChunk, bool, error) {
	st, err := c.streams()
	if err != nil {
		return nil, false, err
	}
	return st.ReadStream(ctx, p)
}

func (c *Client) streams() (backend.StreamStore, error) {
	st, ok := c.b.(backend.StreamStore)
	if !ok {
		return nil, fmt.Errorf("streams: %w: the backend has no streams", backend.ErrNotSupported)
	}
	return st, nil
}

// tailFallbackPoll is how often TailStream reads again without an event:
// events are hints, and a run's end is not an event of the stream.
const tailFallbackPoll = time.Second

// TailStream yields the chunks of stream name of run runID after afterSeq
// (0: from the first), the stored ones first and then live ones as they
// are written, each once and in order, with no gap at the hand-over (the
// empty chunk a writer's Close appends is not yielded: it ends the tail). It
// ends when the stream is closed, when the run is terminal and every
// chunk was yielded, or with an error (ctx's when it ends first: bound a
// tail with a context). A live chunk reaches the tail at once when the
// backend publishes stream events (both built-in ones do), else within a
// second. A missing run ends it with an error wrapping
// backend.ErrRunNotFound.
func (c *Client) TailStream(ctx context.Context, runID, name string, afterSeq int64) iter.Seq2[backend.StreamChunk, error] {
	return func(yield func(backend.StreamChunk, error) bool) {
		st, err := c.streams()
		if err != nil {
			yield(backend.StreamChunk{}, err)
			return
		}
		subCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		// Subscribe before the first read: a chunk committed after that
		// read announces itself, one committed before it is read.
		events, err := c.b.Subscribe(subCtx)
		if err != nil {
			events = nil
		}
		last := afterSeq
		for {
			// Read the run's status before the chunks: if it was terminal
			// then, no chunk can follow the ones read after it.
			run, err := c.b.GetWorkflowRun(ctx, runID)
			if err != nil {
				yield(backend.StreamChunk{}, err)
				return
			}
			for {
				chunks, done, err := st.ReadStream(ctx, backend.ReadStreamParams{WorkflowRunID: runID, Stream: name, AfterSeq: last, Limit: backend.MaxPageSize})
				if err != nil {
					yield(backend.StreamChunk{}, err)
					return
				}
				for _, ch := range chunks {
					last = ch.Seq
					if ch.Closes && len(ch.Data) == 0 {
						continue // the end mark of a writer's Close, no data
					}
					if !yield(ch, nil) {
						return
					}
				}
				if done {
					return
				}
				if len(chunks) < backend.MaxPageSize {
					break
				}
			}
			if run.Status.Terminal() {
				return
			}
			if err := waitForChunk(ctx, events, runID, name, tailFallbackPoll); err != nil {
				yield(backend.StreamChunk{}, err)
				return
			}
		}
	}
}

// waitForChunk returns when an event says stream name of run runID got a
// chunk or the run finished, or that events may have been missed
// (backend.EventResync), after d, or with ctx's error.
func waitForChunk(ctx context.Context, events <-chan backend.Event, runID, name string, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if ev.Kind == backend.EventResync {
				return nil // a chunk's event may have been missed: read again
			}
			if ev.WorkflowRunID != runID {
				continue
			}
			if ev.Kind == backend.EventRunFinished || (ev.Kind == backend.EventChunk && ev.Stream == name) {
				return nil
			}
		}
	}
}
