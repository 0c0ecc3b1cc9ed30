package backend_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/openworkflow-go/openworkflow/backend"
)

// FuzzParseCron feeds ParseCron arbitrary expressions and time zones: it
// never panics, refuses with a *ScheduleFieldError wrapping
// ErrInvalidArgument, and an @every it accepts ticks exactly every
// interval, a whole number of seconds of at least 1s (robfig/cron would
// round "@every 500ms" to a second; issue 19).
func FuzzParseCron(f *testing.F) {
	for _, c := range []struct{ expr, tz string }{
		{"@every 2s", ""}, {"@every 500ms", "UTC"}, {"@every 0s", ""}, {"@every 1500ms", ""}, {"@every -1s", ""},
		{"@every 1h30m", "Europe/Paris"}, {"*/5 * * * *", "America/New_York"}, {"0 30 9 * * MON-FRI", ""},
		{"@hourly", "Local"}, {"CRON_TZ=UTC * * * * *", ""}, {"0 0 30 2 *", ""}, {"@every", ""}, {"@every \xff", ""},
	} {
		f.Add(c.expr, c.tz)
	}
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr, tz string) {
		c, err := backend.ParseCron(expr, tz)
		if err != nil {
			var fe *backend.ScheduleFieldError
			if !errors.As(err, &fe) || !errors.Is(err, backend.ErrInvalidArgument) || (fe.Field != "cron" && fe.Field != "timeZone") {
				t.Fatalf("ParseCron(%q, %q) = %v; want a ScheduleFieldError on cron or timeZone", expr, tz, err)
			}
			return
		}
		rest, every := strings.CutPrefix(strings.TrimSpace(expr), "@every ")
		if !every {
			return
		}
		d, perr := time.ParseDuration(strings.TrimSpace(rest))
		if perr != nil || d < time.Second || d%time.Second != 0 {
			t.Fatalf("ParseCron accepted %q (interval %v, %v): want whole seconds, at least 1s", expr, d, perr)
		}
		first := c.Next(base)
		if next := c.Next(first); next.Sub(first) != d {
			t.Fatalf("%q ticks at %v then %v, want %v apart", expr, first, next, d)
		}
	})
}

// FuzzPrepareSchedule feeds PutScheduleParams.Prepare arbitrary names: a
// schedule it accepts holds nothing its runs would be refused
// (CreateWorkflowRunParams.Validate, the one check of a run's fields),
// and every refusal names a field.
func FuzzPrepareSchedule(f *testing.F) {
	f.Add("nightly", "report", "v1", "@daily", []byte(`{"a":1}`))
	f.Add("n", strings.Repeat("w", 300), "", "@every 1s", []byte(nil))
	f.Add("n\xff", "w\x00", "\xc3(", "@every 500ms", []byte(`"\ud800"`))
	f.Fuzz(func(t *testing.T, name, workflow, version, cron string, input []byte) {
		var v *string
		if version != "" {
			v = &version
		}
		p := backend.PutScheduleParams{Name: name, WorkflowName: workflow, Version: v, Cron: cron, Input: input}
		_, _, err := p.Prepare()
		if err != nil {
			var fe *backend.ScheduleFieldError
			if !errors.As(err, &fe) || fe.Field == "" || !errors.Is(err, backend.ErrInvalidArgument) {
				t.Fatalf("Prepare(%+v) = %v; want a ScheduleFieldError naming a field", p, err)
			}
			if len(err.Error()) > 4*backend.MaxCronLength+1024 {
				t.Fatalf("Prepare's error is %d bytes long: it must cut the value it quotes", len(err.Error()))
			}
			return
		}
		run := backend.CreateWorkflowRunParams{WorkflowName: workflow, Version: v, Input: input}
		if err := run.Validate(); err != nil {
			t.Fatalf("Prepare accepted a schedule whose runs are refused: %v", err)
		}
		if !utf8.ValidString(name) || len(name) > backend.MaxScheduleNameLength || len(workflow) > backend.MaxWorkflowNameLength {
			t.Fatalf("Prepare accepted name %q, workflow %q", name, workflow)
		}
	})
}

// FuzzSameJSON: SameJSON is reflexive and symmetric, and a value is the
// same as itself re-encoded (key order and whitespace aside).
func FuzzSameJSON(f *testing.F) {
	for _, p := range [][2]string{{`{"a":1,"b":[1,2]}`, `{ "b":[1,2], "a":1 }`}, {`1e2`, `100`}, {`1.0`, `1`}, {`"\u0041"`, `"A"`}, {`null`, ``}, {`{"a":1,"a":2}`, `{"a":2}`}, {`[1]`, `[1,1]`}, {`nul`, `nul`}} {
		f.Add([]byte(p[0]), []byte(p[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if !backend.SameJSON(a, a) {
			t.Fatalf("SameJSON(%q, itself) = false", a)
		}
		if backend.SameJSON(a, b) != backend.SameJSON(b, a) {
			t.Fatalf("SameJSON is not symmetric on %q, %q", a, b)
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(a))
		dec.UseNumber()
		if dec.Decode(&v) == nil && !dec.More() && utf8.Valid(a) {
			if re, err := json.Marshal(v); err == nil && !backend.SameJSON(a, re) {
				t.Fatalf("SameJSON(%q, its re-encoding %q) = false", a, re)
			}
		}
	})
}

func TestSameJSON(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{`{"a":1,"b":[1,2]}`, `{"b": [1, 2], "a": 1}`, true},
		{`1e2`, `100`, true},
		{`1.50`, `1.5`, true},
		{`0.1e1`, `1`, true},
		{`-0`, `0.0`, true},
		{`1e999999999`, `1e999999998`, false}, // compared without expanding them
		{`"\u00e9"`, `"é"`, true},
		{``, `null`, true},
		{`{"a":1}`, `{"a":2}`, false},
		{`[1,2]`, `[2,1]`, false},
		{`"1"`, `1`, false},
		{`{"a":null}`, `{}`, false},
	} {
		if got := backend.SameJSON(json.RawMessage(c.a), json.RawMessage(c.b)); got != c.same {
			t.Errorf("SameJSON(%s, %s) = %v, want %v", c.a, c.b, got, c.same)
		}
	}
}
