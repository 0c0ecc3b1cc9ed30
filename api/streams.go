package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

func (h *Handler) listStreams(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	_, err = parseQuery(r)
	if err != nil {
		return err
	}
	if _, err := h.c.GetRun(r.Context(), id); err != nil {
		return asAPIError(err, "id")
	}
	streams, err := h.c.ListStreams(r.Context(), id)
	if err != nil {
		return asAPIError(err, "")
	}
	writeJSON(w, http.StatusOK, listOf(streams, nil, func(s *backend.StreamInfo) backend.StreamInfo { return *s }))
	return nil
}

// ChunkPage answers GET /v1/runs/{id}/streams/{name} in JSON: a page of
// chunks, the cursor of the next (the last chunk's seq; null when the
// page is the last one stored so far), and Done once the stream was
// closed and every chunk read.
type ChunkPage struct {
	List[Chunk]
	Done bool `json:"done"`
}

// readStream answers a page of chunks in JSON, or, when the request
// accepts text/event-stream, the stream itself as Server-Sent Events:
// the stored chunks, then live ones as steps write them, each an event
// "chunk" with id = its seq and data = a Chunk; an event "end" when the
// stream is closed or the run finished. A client that reconnects with
// Last-Event-ID resumes after that chunk, with no gap or duplicate.
func (h *Handler) readStream(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	if err := backend.CheckStreamName(name); err != nil {
		return badField("name", "the stream name in the path must be 1 to %d bytes of text", backend.MaxStreamNameLength)
	}
	q, err := parseQuery(r, "cursor", "limit")
	if err != nil {
		return err
	}
	after, err := q.int64("cursor")
	if err != nil {
		return err
	}
	sse := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	if last := r.Header.Get("Last-Event-ID"); last != "" && sse {
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n < 0 {
			return badField("Last-Event-ID", "Last-Event-ID must be the id of a chunk event (a whole number), got %q", last)
		}
		after = n
	}
	if _, err := h.c.GetRun(r.Context(), id); err != nil {
		return asAPIError(err, "id")
	}
	if _, ok := h.c.Backend().(backend.StreamStore); !ok {
		return errorf(http.StatusNotImplemented, CodeNotSupported, "", "this server's backend has no streams")
	}
	if sse {
		return h.tailStream(w, r, id, name, after)
	}
	limit, err := q.limit(backend.DefaultPageSize)
	if err != nil {
		return err
	}
	ask := limit
	if ask < backend.MaxPageSize {
		ask++ // one more than the page says whether there is a next one
	}
	chunks, done, err := h.c.ReadStream(r.Context(), backend.ReadStreamParams{WorkflowRunID: id, Stream: name, AfterSeq: after, Limit: ask, MaxBytes: h.opts.MaxListBytes})
	if err != nil {
		return asAPIError(err, "")
	}
	// The page's chunks within the byte budget: the backend stopped at the
	// first chunk beyond it and returned it last, so a cut says more follow.
	budget := backend.PageBudget{Max: h.opts.MaxListBytes}
	for i := range min(limit, len(chunks)) {
		if !budget.Fits(len(chunks[i].Data)) {
			limit = i
			break
		}
	}
	more := len(chunks) > limit || (len(chunks) == limit && ask == limit && !done)
	if len(chunks) > limit {
		chunks, done = chunks[:limit], false
	}
	var next *string
	if more {
		s := strconv.FormatInt(chunks[len(chunks)-1].Seq, 10)
		next = &s
	}
	shown := chunks[:0:0]
	for _, c := range chunks {
		if !(c.Closes && len(c.Data) == 0) { // a writer's Close: the end, no data
			shown = append(shown, c)
		}
	}
	page := ChunkPage{List: listOf(shown, next, ChunkOf), Done: done}
	writeJSON(w, http.StatusOK, page)
	return nil
}

// tailStream answers the stream as Server-Sent Events.
func (h *Handler) tailStream(w http.ResponseWriter, r *http.Request, runID, name string, after int64) error {
	ctx, cancel := h.done(r)
	defer cancel()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, ": openworkflow stream\n\n")
	_ = rc.Flush()

	type item struct {
		c   backend.StreamChunk
		err error
	}
	items := make(chan item)
	finished := make(chan struct{})
	go func() { // owned by this request: ctx ends it, finished says it has
		defer close(finished)
		defer close(items)
		for c, err := range h.c.TailStream(ctx, runID, name, after) {
			select {
			case items <- item{c, err}:
			case <-ctx.Done():
				return
			}
		}
	}()
	defer func() { cancel(); <-finished }()

	keepAlive := time.NewTicker(h.opts.KeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil // the client left, or the server shuts down: it reconnects with Last-Event-ID
		case <-keepAlive.C:
			_, _ = fmt.Fprint(w, ": keep-alive\n\n")
		case it, ok := <-items:
			switch {
			case !ok && ctx.Err() != nil:
				// The tail ended because the client left or the server
				// shuts down, racing ctx.Done above: not the stream's end,
				// which would tell the client not to reconnect.
				return nil
			case !ok:
				_, _ = fmt.Fprint(w, "event: end\ndata: {}\n\n")
				_ = rc.Flush()
				return nil
			case it.err != nil:
				if ctx.Err() != nil {
					return nil
				}
				b, _ := json.Marshal(asAPIError(it.err, ""))
				_, _ = fmt.Fprintf(w, "event: error\ndata: %s\n\n", b)
				_ = rc.Flush()
				return nil
			}
			b, _ := json.Marshal(ChunkOf(&it.c))
			_, _ = fmt.Fprintf(w, "id: %d\nevent: chunk\ndata: %s\n\n", it.c.Seq, b)
		}
		if err := rc.Flush(); err != nil {
			return nil
		}
	}
}
