package backend

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
)

// Cursor is the position of a record in a list, encoded for clients as
// base64 of JSON {"createdAt": ISO-8601 with milliseconds, "id"}, as in
// OpenWorkflow, so cursors are exchangeable between SDKs.
type Cursor struct {
	// CreatedAt and ID are the record's; the pair orders records totally.
	CreatedAt time.Time
	ID        string
}

type cursorJSON struct {
	CreatedAt string `json:"createdAt"`
	ID        string `json:"id"`
}

// TimeLayout is the fixed-width UTC millisecond ISO-8601 layout used for
// timestamps in cursors, step contexts and SQLite columns
// ("2006-01-02T15:04:05.000Z", JavaScript's toISOString).
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime formats t in [TimeLayout] (UTC, truncated to milliseconds).
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// ParseTime parses an ISO-8601 / RFC 3339 timestamp as written by either SDK.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

// Encode returns the opaque cursor string.
func (c Cursor) Encode() string {
	b, _ := json.Marshal(cursorJSON{CreatedAt: FormatTime(c.CreatedAt), ID: c.ID})
	return base64.StdEncoding.EncodeToString(b)
}

// DecodeCursor parses a cursor made by [Cursor.Encode]; it returns an error
// wrapping [ErrInvalidArgument] when s is not one.
func DecodeCursor(s string) (Cursor, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		if b, err = base64.RawURLEncoding.DecodeString(s); err != nil {
			return Cursor{}, fmt.Errorf("%w: cursor %q is not base64", ErrInvalidArgument, s)
		}
	}
	var cj cursorJSON
	if err := json.Unmarshal(b, &cj); err != nil || cj.ID == "" {
		return Cursor{}, fmt.Errorf("%w: cursor %q is not a list cursor", ErrInvalidArgument, s)
	}
	t, err := ParseTime(cj.CreatedAt)
	if err != nil {
		return Cursor{}, fmt.Errorf("%w: cursor %q has a bad createdAt: %v", ErrInvalidArgument, s, err)
	}
	return Cursor{CreatedAt: t, ID: cj.ID}, nil
}

// MaxPageSize is the largest page a list call returns: a Limit above it
// is refused with [ErrInvalidArgument].
const MaxPageSize = 1000

// ResolvePage checks and resolves the paging of a list call, as every
// backend does: at most one of after and before (cursors from
// [Cursor.Encode]), a limit from 0 (meaning [DefaultPageSize]) to
// [MaxPageSize]. The cursors are nil when not given. Errors wrap
// [ErrInvalidArgument] and say what was wrong.
func ResolvePage(limit int, after, before string) (int, *Cursor, *Cursor, error) {
	if after != "" && before != "" {
		return 0, nil, nil, fmt.Errorf("%w: cannot give both an after and a before cursor", ErrInvalidArgument)
	}
	switch {
	case limit < 0:
		return 0, nil, nil, fmt.Errorf("%w: negative limit %d", ErrInvalidArgument, limit)
	case limit > MaxPageSize:
		return 0, nil, nil, fmt.Errorf("%w: limit %d is above the largest page, %d", ErrInvalidArgument, limit, MaxPageSize)
	case limit == 0:
		limit = DefaultPageSize
	}
	var cursors [2]*Cursor
	for i, s := range []string{after, before} {
		if s == "" {
			continue
		}
		c, err := DecodeCursor(s)
		if err != nil {
			return 0, nil, nil, err
		}
		cursors[i] = &c
	}
	return limit, cursors[0], cursors[1], nil
}
