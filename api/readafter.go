package api

import (
	"net/http"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Read-your-writes with a read replica. When the backend has a read
// replica ([backend.ReadReplicas]), the answer to every request that may
// write (any method but GET, HEAD and OPTIONS) carries the primary's WAL
// position after the write, in the header [ReadAfterHeader] and the
// cookie [ReadAfterCookie]; a GET presenting it (header first, then
// cookie) is served by the replica only once the replica has replayed
// that position, else by the primary. A GET presenting nothing may be
// served by the replica, up to the backend's lag bound behind. Without a
// replica neither is set nor read.
const (
	// ReadAfterHeader is the request and response header carrying the
	// read-after token ("0/16B3740").
	ReadAfterHeader = "OpenWorkflow-Read-After"
	// ReadAfterCookie is the cookie carrying the same token, for
	// browsers; HttpOnly, SameSite=Lax, path /, kept 5 minutes (far
	// longer than any lag the replica is used with).
	ReadAfterCookie = "ow_read_after"
	// readAfterCookieAge is the cookie's Max-Age.
	readAfterCookieAge = 5 * time.Minute
	// maxReadAfterLen bounds the token read from a request: a pg_lsn is
	// at most 17 characters; a longer value is ignored (the primary
	// serves).
	maxReadAfterLen = 32
)

// replicas returns the backend's read replicas when it has one.
func (h *Handler) replicas() backend.ReadReplicas {
	if h.c == nil {
		return nil
	}
	rr, ok := h.c.Backend().(backend.ReadReplicas)
	if !ok || !rr.HasReadReplica() {
		return nil
	}
	return rr
}

// routeReads marks a reading request's context for the replica with the
// token it presents, or wraps a writing request's answer so that its
// headers carry the token of its write. It returns r and w unchanged
// without a replica.
func (h *Handler) routeReads(w *recorder, r *http.Request) *http.Request {
	rr := h.replicas()
	if rr == nil {
		return r
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		token := r.Header.Get(ReadAfterHeader)
		if token == "" {
			if c, err := r.Cookie(ReadAfterCookie); err == nil {
				token = c.Value
			}
		}
		if len(token) > maxReadAfterLen {
			token = "-" // not a position: the primary serves
		}
		return r.WithContext(backend.WithReplicaReads(r.Context(), token))
	case http.MethodOptions:
		return r
	}
	w.beforeHeader = func() {
		token, err := rr.ReadAfter(r.Context())
		if err != nil {
			if h.opts.Logger != nil {
				h.opts.Logger.Warn("read the primary's WAL position for read-your-writes", "err", err)
			}
			return
		}
		w.Header().Set(ReadAfterHeader, token)
		http.SetCookie(w, &http.Cookie{Name: ReadAfterCookie, Value: token, Path: "/", MaxAge: int(readAfterCookieAge / time.Second),
			HttpOnly: true, SameSite: http.SameSiteLaxMode})
	}
	return r
}
