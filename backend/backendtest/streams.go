package backendtest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// streamStore returns b's streams, skipping the test when b has none.
func streamStore(t testing.TB, b backend.Backend) backend.StreamStore {
	t.Helper()
	st, ok := b.(backend.StreamStore)
	if !ok {
		t.Skip("the backend does not implement backend.StreamStore")
	}
	return st
}

// writer is a step attempt of a run writing to its streams, under the
// claim of worker.
type writer struct {
	run     *backend.WorkflowRun
	worker  string
	attempt string
}

// newWriter returns a writer for a fresh attempt id (its step_attempts
// row, if any, is the caller's business).
func newWriter(run *backend.WorkflowRun, worker string) writer {
	return writer{run: run, worker: worker, attempt: "step_" + randomHex(8)}
}

// step returns a writer whose attempt is a running function attempt of
// the run, inserted by worker.
func step(t testing.TB, b backend.Backend, run *backend.WorkflowRun, worker, name string) writer {
	t.Helper()
	a := createStep(t, b, run.ID, worker, name, backend.StepFunction, "")
	return writer{run: run, worker: worker, attempt: a.ID}
}

// finish completes (or, with failed, fails) the writer's attempt.
func (wr writer) finish(t testing.TB, b backend.Backend, failed bool) {
	t.Helper()
	var err error
	if failed {
		_, err = Single(b).FailStepAttempt(t.Context(), FailStepAttemptParams{WorkflowRunID: wr.run.ID, StepAttemptID: wr.attempt, WorkerID: wr.worker, Error: []byte(`{"message":"x"}`)})
	} else {
		_, err = Single(b).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{WorkflowRunID: wr.run.ID, StepAttemptID: wr.attempt, WorkerID: wr.worker, Output: []byte(`null`)})
	}
	if err != nil {
		t.Fatalf("finish step attempt %s: %v", wr.attempt, err)
	}
}

// params are the params of an append of data to stream.
func (wr writer) params(stream string, data []byte, closing bool) backend.AppendChunkParams {
	return backend.AppendChunkParams{WorkflowRunID: wr.run.ID, WorkerID: wr.worker, StepAttemptID: wr.attempt,
		Stream: stream, Data: data, Close: closing}
}

// append appends data to stream and returns the chunk's number.
func (wr writer) append(t testing.TB, b backend.Backend, stream, data string) int64 {
	t.Helper()
	seq, err := streamStore(t, b).AppendChunk(t.Context(), wr.params(stream, []byte(data), false))
	if err != nil {
		t.Fatalf("AppendChunk(%s, %q): %v", stream, data, err)
	}
	return seq
}

// close appends the closing chunk (empty) and returns its number.
func (wr writer) close(t testing.TB, b backend.Backend, stream string) int64 {
	t.Helper()
	seq, err := streamStore(t, b).AppendChunk(t.Context(), wr.params(stream, nil, true))
	if err != nil {
		t.Fatalf("AppendChunk(%s, close): %v", stream, err)
	}
	return seq
}

// readStream reads one page of a stream.
func readStream(t testing.TB, b backend.Backend, runID, stream string, after int64, limit int) ([]backend.StreamChunk, bool) {
	t.Helper()
	chunks, done, err := streamStore(t, b).ReadStream(t.Context(), backend.ReadStreamParams{WorkflowRunID: runID, Stream: stream, AfterSeq: after, Limit: limit})
	if err != nil {
		t.Fatalf("ReadStream(%s, after %d): %v", stream, after, err)
	}
	if chunks == nil {
		t.Fatalf("ReadStream(%s, after %d) returned nil chunks, want a non-nil slice", stream, after)
	}
	return chunks, done
}

// requireShown checks that the stream shows exactly the chunks numbered
// want (read whole from the start), and whether it is done.
func requireShown(t testing.TB, b backend.Backend, runID, stream string, wantDone bool, want ...int64) []backend.StreamChunk {
	t.Helper()
	chunks, done := readStream(t, b, runID, stream, 0, backend.MaxPageSize)
	got := make([]int64, len(chunks))
	for i, c := range chunks {
		got[i] = c.Seq
	}
	if !slices.Equal(got, want) || done != wantDone {
		t.Fatalf("stream %s shows chunks %v (done %v), want %v (done %v)", stream, got, done, want, wantDone)
	}
	return chunks
}

func testStreams(t *testing.T, s *suite) {
	t.Run("numbers chunks 1, 2, … and returns their bytes byte for byte, in order", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		wr := newWriter(run, w)
		chunks := [][]byte{
			[]byte("first\n"), {0x00, 0xff, 0xfe, 0x00}, []byte("invalid \xc3\x28 UTF-8"), {},
			[]byte("héllo, 世界 \U0001F600"), bytes.Repeat([]byte{0x00}, 1024),
		}
		start := time.Now()
		for i, data := range chunks {
			seq, err := streamStore(t, b).AppendChunk(t.Context(), wr.params("out", data, false))
			if err != nil || seq != int64(i+1) {
				t.Fatalf("AppendChunk %d = %d, %v; want seq %d", i+1, seq, err, i+1)
			}
		}
		got := requireShown(t, b, run.ID, "out", false, 1, 2, 3, 4, 5, 6)
		for i, c := range got {
			if !bytes.Equal(c.Data, chunks[i]) || c.Data == nil {
				t.Fatalf("chunk %d = %q, want %q byte for byte", c.Seq, c.Data, chunks[i])
			}
			if c.WorkflowRunID != run.ID || c.Stream != "out" || c.StepAttemptID != wr.attempt {
				t.Fatalf("chunk %d names run %s, stream %s, attempt %s; want %s, out, %s", c.Seq, c.WorkflowRunID, c.Stream, c.StepAttemptID, run.ID, wr.attempt)
			}
			requireTimeIn(t, "chunk created_at", &c.CreatedAt, since(start))
		}
	})

	t.Run("fences AppendChunk on the run's lease, storing nothing", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		st := streamStore(t, b)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		_, err := st.AppendChunk(t.Context(), newWriter(run, newWorkerID()).params("out", []byte("x"), false))
		requireErrorIs(t, "AppendChunk by a worker without the lease", err, backend.ErrNotOwner)
		ghost := &backend.WorkflowRun{ID: "wrun_" + randomHex(8)}
		_, err = st.AppendChunk(t.Context(), newWriter(ghost, w).params("out", []byte("x"), false))
		requireErrorIs(t, "AppendChunk to a missing run", err, backend.ErrRunNotFound)
		requireErrorIs(t, "AppendChunk to a missing run", err, backend.ErrNotOwner)
		park(t, b, run.ID, w, time.Now().Add(farFuture))
		_, err = st.AppendChunk(t.Context(), newWriter(run, w).params("out", []byte("x"), false))
		requireErrorIs(t, "AppendChunk to a parked run", err, backend.ErrNotOwner)
		requireStreams(t, b, run.ID)
		requireShown(t, b, run.ID, "out", false)
	})

	t.Run("refuses hostile params with ErrInvalidArgument naming the field, storing nothing", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		st := streamStore(t, b)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		wr := newWriter(run, w)
		for _, c := range []struct {
			name, field string
			edit        func(*backend.AppendChunkParams)
		}{
			{"a stream name with U+0000", "stream name", func(p *backend.AppendChunkParams) { p.Stream = "lo\x00gs" }},
			{"a stream name of invalid UTF-8", "stream name", func(p *backend.AppendChunkParams) { p.Stream = "logs\xff" }},
			{"an empty stream name", "stream name", func(p *backend.AppendChunkParams) { p.Stream = "" }},
			{"a stream name over the limit", "stream name", func(p *backend.AppendChunkParams) { p.Stream = strings.Repeat("s", backend.MaxStreamNameLength+1) }},
			{"a chunk over the limit", "chunk", func(p *backend.AppendChunkParams) { p.Data = make([]byte, backend.MaxChunkSize+1) }},
			{"a step attempt id with U+0000", "step attempt id", func(p *backend.AppendChunkParams) { p.StepAttemptID = "step_\x00" }},
			{"a worker id of invalid UTF-8", "worker id", func(p *backend.AppendChunkParams) { p.WorkerID = "w\xc3" }},
		} {
			p := wr.params("logs", []byte("x"), false)
			c.edit(&p)
			_, err := st.AppendChunk(t.Context(), p)
			requireErrorIs(t, "AppendChunk with "+c.name, err, backend.ErrInvalidArgument)
			if !strings.Contains(err.Error(), c.field) {
				t.Fatalf("AppendChunk with %s: error %q does not name the %s", c.name, err, c.field)
			}
		}
		requireStreams(t, b, run.ID)
		for _, p := range []backend.ReadStreamParams{
			{WorkflowRunID: run.ID, Stream: "lo\x00gs"}, {WorkflowRunID: run.ID, Stream: ""},
			{WorkflowRunID: run.ID, Stream: "logs", AfterSeq: -1}, {WorkflowRunID: run.ID, Stream: "logs", Limit: backend.MaxPageSize + 1},
			{WorkflowRunID: "wrun_\xff", Stream: "logs"},
		} {
			_, _, err := st.ReadStream(t.Context(), p)
			requireErrorIs(t, fmt.Sprintf("ReadStream(%+v)", p), err, backend.ErrInvalidArgument)
		}
	})

	t.Run("pages with AfterSeq and Limit, with no gap and no overlap", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		wr := newWriter(run, w)
		for i := range 5 {
			wr.append(t, b, "out", fmt.Sprint(i+1))
		}
		var after int64
		var sizes []int
		for range 4 {
			page, done := readStream(t, b, run.ID, "out", after, 2)
			if done {
				t.Fatal("an open stream read as done")
			}
			for _, c := range page {
				if c.Seq != after+1 || string(c.Data) != fmt.Sprint(c.Seq) {
					t.Fatalf("after %d read chunk %d %q", after, c.Seq, c.Data)
				}
				after = c.Seq
			}
			sizes = append(sizes, len(page))
		}
		if !slices.Equal(sizes, []int{2, 2, 1, 0}) {
			t.Fatalf("pages of 2 over 5 chunks have sizes %v, want [2 2 1 0]", sizes)
		}
		if page, done := readStream(t, b, run.ID, "missing", 0, 0); len(page) != 0 || done {
			t.Fatalf("an unknown stream = %d chunks, done %v; want empty and open", len(page), done)
		}
		if page, done := readStream(t, b, "wrun_"+randomHex(8), "out", 0, 0); len(page) != 0 || done {
			t.Fatalf("a stream of an unknown run = %d chunks, done %v; want empty and open", len(page), done)
		}
	})

	t.Run("ends at the closing chunk, then refuses appends with ErrStreamClosed", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		st := streamStore(t, b)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		wr := newWriter(run, w)
		wr.append(t, b, "out", "a")
		wr.append(t, b, "out", "b")
		seq, err := st.AppendChunk(t.Context(), wr.params("out", []byte("last"), true))
		if err != nil || seq != 3 {
			t.Fatalf("closing AppendChunk = %d, %v; want 3", seq, err)
		}
		if page, done := readStream(t, b, run.ID, "out", 0, 2); len(page) != 2 || done || page[0].Closes || page[1].Closes {
			t.Fatalf("a page short of the close: %d chunks, done %v; want 2, neither closing, not done", len(page), done)
		}
		if page, done := readStream(t, b, run.ID, "out", 2, 2); len(page) != 1 || string(page[0].Data) != "last" || !page[0].Closes || !done {
			t.Fatalf("the page with the close: %d chunks, done %v; want the closing chunk (Closes), done", len(page), done)
		}
		if page, done := readStream(t, b, run.ID, "out", 3, 0); len(page) != 0 || !done {
			t.Fatalf("reading after the close: %d chunks, done %v; want none, done", len(page), done)
		}
		for _, other := range []writer{wr, newWriter(run, w)} {
			_, err = st.AppendChunk(t.Context(), other.params("out", []byte("too late"), false))
			requireErrorIs(t, "AppendChunk after the close", err, backend.ErrStreamClosed)
			_, err = st.AppendChunk(t.Context(), other.params("out", nil, true))
			requireErrorIs(t, "a second close", err, backend.ErrStreamClosed)
		}
		requireShown(t, b, run.ID, "out", true, 1, 2, 3)
		requireStreams(t, b, run.ID, backend.StreamInfo{Stream: "out", Chunks: 3, Closed: true})
	})

	t.Run("numbers concurrent appends 1 to N, none lost, none after a close", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		const n = 20
		seqs := make([]int64, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				// Parallel steps: one attempt each; the tenth closes.
				p := newWriter(run, w).params("out", []byte(fmt.Sprint(i)), i == 9)
				seqs[i], errs[i] = streamStore(t, b).AppendChunk(t.Context(), p)
			})
		}
		wg.Wait()
		closeSeq := seqs[9]
		if errs[9] != nil {
			t.Fatalf("the closing append failed: %v", errs[9])
		}
		var stored []int64
		for i, err := range errs {
			switch {
			case err == nil && seqs[i] > closeSeq:
				t.Fatalf("append %d got seq %d after the close (%d)", i, seqs[i], closeSeq)
			case err == nil:
				stored = append(stored, seqs[i])
			case !errors.Is(err, backend.ErrStreamClosed):
				t.Fatalf("append %d: %v", i, err)
			}
		}
		slices.Sort(stored)
		want := make([]int64, closeSeq)
		for i := range want {
			want[i] = int64(i + 1)
		}
		if !slices.Equal(stored, want) {
			t.Fatalf("appends stored seqs %v, want 1 to %d each once", stored, closeSeq)
		}
		requireShown(t, b, run.ID, "out", true, want...)
	})

	testStreamVisibility(t, s)

	t.Run("announces each chunk to subscribers, naming the run, the stream and the number", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		ch := subscribe(t, b)
		wr := newWriter(run, w)
		for want := int64(1); want <= 3; want++ {
			seq := wr.append(t, b, "tokens", "t")
			awaitEvent(t, ch, fmt.Sprintf("EventChunk %d", want), func(e backend.Event) bool {
				return e.Kind == backend.EventChunk && e.WorkflowRunID == run.ID && e.Stream == "tokens" && e.Seq == seq && seq == want
			})
		}
	})

	t.Run("lists a run's streams by name with their counts and closes; an unknown run has none", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		other := startRun(t, b, newWorkerID(), backend.CreateWorkflowRunParams{})
		wr := newWriter(run, w)
		wr.append(t, b, "stdout", "a")
		wr.append(t, b, "Progress", "1")
		wr.append(t, b, "stdout", "b")
		wr.close(t, b, "Progress")
		newWriter(other, *other.WorkerID).append(t, b, "elsewhere", "x")
		requireStreams(t, b, run.ID,
			backend.StreamInfo{Stream: "Progress", Chunks: 1, Closed: true}, // the close's empty chunk is not counted
			backend.StreamInfo{Stream: "stdout", Chunks: 2, Closed: false})
		requireStreams(t, b, "wrun_"+randomHex(8))
	})
}

// requireStreams checks ListStreams(runID).
func requireStreams(t testing.TB, b backend.Backend, runID string, want ...backend.StreamInfo) {
	t.Helper()
	got, err := streamStore(t, b).ListStreams(t.Context(), runID)
	if err != nil {
		t.Fatalf("ListStreams(%s): %v", runID, err)
	}
	if got == nil || !slices.Equal(got, append([]backend.StreamInfo{}, want...)) {
		t.Fatalf("ListStreams(%s) = %+v, want %+v", runID, got, want)
	}
}
