package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openworkflow-go/openworkflow/backend"
)

// decodeBody decodes r's JSON body into v. Unknown members are refused
// (a misspelt field is a mistake to report, not to ignore), and so is a
// body that is not UTF-8 (encoding/json would silently turn each invalid
// byte into U+FFFD, storing a name the client never sent); an empty body
// decodes to v's zero value when optional is true. The body must be
// declared JSON (Content-Type application/json or */*+json); a body of
// another type or none, or an empty body declared of another type,
// answers 415 before it is read: text/plain and forms are what a page of
// another site can send without the browser asking the server first.
// Other errors are 400 naming the member, or 413.
func decodeBody(r *http.Request, v any, optional bool) error {
	ct := r.Header.Get("Content-Type")
	if ct != "" || r.ContentLength != 0 {
		if err := requireJSON(ct); err != nil {
			return err
		}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return err
		}
		return badField("", "read the request body: %s", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if optional {
			return nil
		}
		return badField("", "the request needs a JSON body")
	}
	if !utf8.Valid(body) {
		field := invalidUTF8Member(body)
		if field == "" {
			return badField("", "the body is not valid UTF-8: send JSON encoded in UTF-8")
		}
		return badField(field, "%s is not valid UTF-8: send JSON encoded in UTF-8 (invalid bytes are refused, not replaced)", field)
	}
	return decodeJSON(body, v)
}

// requireJSON answers 415 unless the media type ct is application/json
// or a structured "+json" type (parameters such as charset aside).
func requireJSON(ct string) error {
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || (strings.HasSuffix(mt, "+json") && strings.Contains(mt, "/"))) {
		return nil
	}
	got := "no Content-Type"
	if ct != "" {
		got = fmt.Sprintf("Content-Type %q", ct)
	}
	return errorf(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "", "the body must be JSON sent with \"Content-Type: application/json\", not %s", got)
}

// invalidUTF8Member names the member of the JSON object body whose value
// holds invalid UTF-8 ("" when none does: the invalid bytes are in a key,
// or body is not an object).
func invalidUTF8Member(body []byte) string {
	var members map[string]json.RawMessage // raw values keep their bytes as sent
	if json.Unmarshal(body, &members) != nil {
		return ""
	}
	var bad []string
	for k, raw := range members {
		if !utf8.Valid(raw) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return ""
	}
	slices.Sort(bad)
	return bad[0]
}

func decodeJSON(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return badField("", "the request body holds more than one JSON value")
	}
	return nil
}

// jsonError turns a decoding error into a 400 naming where it happened.
func jsonError(err error) *Error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return badField("", "the body is not valid JSON at byte %d: %s", syntax.Offset, syntax)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return badField("", "the body must be a JSON %s, not %s", typ.Type, typ.Value)
		}
		return badField(field, "%s must be %s, not a JSON %s", field, jsonKind(typ.Type.String()), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badField("", "the body ends in the middle of a JSON value")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return badField(name, "unknown member %q; GET /v1/openapi.json describes the request", name)
	}
	var timeErr *time.ParseError
	if errors.As(err, &timeErr) {
		return badField("", "a time must be RFC 3339, e.g. 2026-01-02T15:04:05Z: %s", timeErr)
	}
	return badField("", "the body is not valid: %s", err)
}

func jsonKind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "float"), strings.HasPrefix(goType, "uint"):
		return "a number"
	case goType == "string", strings.HasSuffix(goType, "*string"):
		return "a string"
	case goType == "bool":
		return "true or false"
	case strings.Contains(goType, "time.Time"):
		return "an RFC 3339 time"
	default:
		return "a " + goType
	}
}

// query reads the query parameters, refusing a malformed query string.
type query struct {
	v url.Values
}

// parseQuery reads r's query, refusing a malformed query string and any
// parameter outside known (see query.known).
func parseQuery(r *http.Request, known ...string) (query, error) {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return query{}, badField("", "the query string is malformed: %s", err)
	}
	q := query{v}
	return q, q.known(known...)
}

// known refuses parameters outside names: a misspelt filter would
// otherwise silently list everything.
func (q query) known(names ...string) error {
	for k := range q.v {
		ok := false
		for _, n := range names {
			ok = ok || k == n
		}
		if !ok {
			return badField(k, "unknown query parameter %q; this route takes %s", k, strings.Join(names, ", "))
		}
	}
	return nil
}

func (q query) str(name string) string { return q.v.Get(name) }

// limit reads the page size: 1 to backend.MaxPageSize, default def.
func (q query) limit(def int) (int, error) {
	s := q.v.Get("limit")
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > backend.MaxPageSize {
		return 0, badField("limit", "limit must be a whole number from 1 to %d, got %q", backend.MaxPageSize, s)
	}
	return n, nil
}

// int64 reads a non-negative integer parameter.
func (q query) int64(name string) (int64, error) {
	s := q.v.Get(name)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, badField(name, "%s must be a whole number ≥ 0, got %q", name, s)
	}
	return n, nil
}

// time reads an RFC 3339 time parameter; nil when absent.
func (q query) time(name string) (*time.Time, error) {
	s := q.v.Get(name)
	if s == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, badField(name, "%s must be an RFC 3339 time, e.g. 2026-01-02T15:04:05Z, got %q", name, s)
	}
	return &t, nil
}

// resolveNone reads resolveData on a route answering one record: "none"
// blanks inputs, outputs and metadata; anything else, including unknown
// values, means "all" (as in the World API: an unknown value must never
// hide data by mistake).
func (q query) resolveNone() bool { return q.v.Get("resolveData") == "none" }

// resolveAll reads resolveData on a list route, where payloads are left
// out unless asked for: "all" includes them, "none" or no value leaves
// them out, and any other value is refused (a list silently without the
// data a misspelt value meant to ask for would be a trap).
func (q query) resolveAll() (bool, error) {
	switch s := q.v.Get("resolveData"); s {
	case "all":
		return true, nil
	case "", "none":
		return false, nil
	default:
		return false, badField("resolveData", "resolveData must be all (inputs, outputs and metadata included, within the page's byte budget) or none (the default on lists), got %q", s)
	}
}

// status reads a run status filter.
func (q query) status() (backend.RunStatus, error) {
	s := q.v.Get("status")
	if s == "" {
		return "", nil
	}
	st := backend.RunStatus(s)
	switch st {
	case backend.RunPending, backend.RunRunning, backend.RunCompleted, backend.RunFailed, backend.RunCanceled:
		return st, nil
	}
	return "", badField("status", "status must be one of pending, running, completed, failed, canceled; got %q", s)
}

// pathID reads and checks a path parameter naming an id.
func pathID(r *http.Request, name string) (string, error) {
	v := r.PathValue(name)
	if v == "" || len(v) > 255 || !backend.ValidText(v) {
		return "", badField(name, "the %s in the path must be 1 to 255 bytes of text", name)
	}
	return v, nil
}

// bodyTime parses an optional RFC 3339 time of a JSON body's member
// field.
func bodyTime(field string, s *string) (*time.Time, error) {
	if s == nil {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return nil, badField(field, "%s must be an RFC 3339 time, e.g. 2026-01-02T15:04:05Z, got %q", field, *s)
	}
	return &t, nil
}
