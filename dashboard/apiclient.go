package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/openworkflow-go/openworkflow/api"
)

// apiClient calls the HTTP API's handler in process: every page the
// dashboard shows and every action it takes is one or more operations of
// the API, with the API's own validation and errors, so the dashboard can
// neither show nor do anything an API client cannot. No socket and no
// token are involved: the handler is the dashboard's own (the dashboard
// checks its visitor's credentials before it calls).
type apiClient struct {
	h http.Handler
}

// get calls GET path?query and decodes the JSON answer into out. An
// error answer is returned as an *api.Error with its Status set.
func (a apiClient) get(ctx context.Context, path string, query url.Values, out any) error {
	_, err := a.call(ctx, http.MethodGet, path, query, nil, out)
	return err
}

// post calls POST path with body (JSON-encoded unless it is already a
// json.RawMessage; nil sends no body) and decodes the answer into out
// (nil: ignored).
func (a apiClient) post(ctx context.Context, path string, body, out any) error {
	_, err := a.call(ctx, http.MethodPost, path, nil, body, out)
	return err
}

// call makes one request of the API and returns the raw JSON answer too,
// which live views fingerprint to tell whether anything changed.
func (a apiClient) call(ctx context.Context, method, path string, query url.Values, body, out any) ([]byte, error) {
	var rd io.Reader = http.NoBody
	if body != nil {
		raw, ok := body.(json.RawMessage)
		if !ok {
			var err error
			if raw, err = json.Marshal(body); err != nil {
				return nil, fmt.Errorf("encode the request of %s %s: %w", method, path, err)
			}
		}
		rd = bytes.NewReader(raw)
	}
	u := &url.URL{Path: path, RawQuery: query.Encode()}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("build %s %s: %w", method, path, err)
	}
	req.RemoteAddr = "dashboard"
	// The request never leaves the process: it is addressed to this
	// machine, which the API's guard of a server without a token wants.
	req.Host = "localhost"
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	ra := readAfterOf(ctx)
	if token := ra.get(); token != "" {
		req.Header.Set(api.ReadAfterHeader, token)
	}
	w := &bufferWriter{header: http.Header{}}
	a.h.ServeHTTP(w, req)
	ra.set(w.header.Get(api.ReadAfterHeader))
	if w.status >= 400 {
		e := &api.Error{}
		if err := json.Unmarshal(w.buf.Bytes(), e); err != nil || e.Message == "" {
			e = &api.Error{Code: api.CodeInternal, Message: fmt.Sprintf("%s %s answered %d", method, path, w.status)}
		}
		e.Status = w.status
		return nil, e
	}
	if out != nil {
		if err := json.Unmarshal(w.buf.Bytes(), out); err != nil {
			return nil, fmt.Errorf("decode the answer of %s %s: %w", method, path, err)
		}
	}
	return w.buf.Bytes(), nil
}

// apiStatus is the HTTP status of an API error (503 for another error:
// the API was not reached or its answer not understood).
func apiStatus(err error) int {
	var e *api.Error
	if errors.As(err, &e) && e.Status != 0 {
		return e.Status
	}
	return http.StatusServiceUnavailable
}

// apiCode is the API error code of err, or "".
func apiCode(err error) api.Code {
	var e *api.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// bufferWriter is the http.ResponseWriter of an in-process call.
type bufferWriter struct {
	header http.Header
	status int
	buf    bytes.Buffer
}

func (w *bufferWriter) Header() http.Header { return w.header }

func (w *bufferWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *bufferWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.buf.Write(b)
}
