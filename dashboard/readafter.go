package dashboard

import (
	"context"
	"net/http"
	"sync"

	"github.com/openworkflow-go/openworkflow/api"
)

// Read-your-writes through the dashboard, with a read replica: the
// dashboard calls the API in process, so the API's cookie never reaches
// the browser by itself. The browser's ow_read_after cookie
// ([api.ReadAfterCookie]) is read into the request's context; each API
// call carries it ([api.ReadAfterHeader]); an API write's answer replaces
// it, and the page's answer sets the cookie anew. A visitor who cancels a
// run and is redirected to its page sees it canceled, whatever the
// replica's lag. Without a replica the API sends no token and nothing is
// set.

// readAfterKey is the context key of the request's *readAfter.
type readAfterKey struct{}

// readAfter is the token of one browser request: the cookie's, then the
// latest API write's.
type readAfter struct {
	mu      sync.Mutex
	token   string
	changed bool
}

func readAfterOf(ctx context.Context) *readAfter {
	ra, _ := ctx.Value(readAfterKey{}).(*readAfter)
	return ra
}

func (ra *readAfter) get() string {
	if ra == nil {
		return ""
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	return ra.token
}

func (ra *readAfter) set(token string) {
	if ra == nil || token == "" {
		return
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	ra.token, ra.changed = token, true
}

// maxReadAfterCookie bounds the cookie's value taken from a browser; a
// WAL position is at most 17 characters.
const maxReadAfterCookie = 32

// readYourWrites carries the read-after token between the browser's
// cookie and the in-process API calls of one request.
func readYourWrites(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ra := &readAfter{}
		if c, err := r.Cookie(api.ReadAfterCookie); err == nil && len(c.Value) <= maxReadAfterCookie {
			ra.token = c.Value
		}
		next.ServeHTTP(&readAfterWriter{ResponseWriter: w, ra: ra}, r.WithContext(context.WithValue(r.Context(), readAfterKey{}, ra)))
	})
}

// readAfterWriter sets the cookie, when an API write changed the token,
// just before the answer's headers go.
type readAfterWriter struct {
	http.ResponseWriter
	ra   *readAfter
	sent bool
}

func (w *readAfterWriter) header() {
	if w.sent {
		return
	}
	w.sent = true
	w.ra.mu.Lock()
	token, changed := w.ra.token, w.ra.changed
	w.ra.mu.Unlock()
	if changed {
		http.SetCookie(w.ResponseWriter, &http.Cookie{Name: api.ReadAfterCookie, Value: token, Path: "/", MaxAge: 300, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	}
}

func (w *readAfterWriter) WriteHeader(code int) {
	w.header()
	w.ResponseWriter.WriteHeader(code)
}

func (w *readAfterWriter) Write(b []byte) (int, error) {
	w.header()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (live views
// flush).
func (w *readAfterWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
