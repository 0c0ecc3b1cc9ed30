package backend_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openworkflow-go/openworkflow/backend"
)

// jsonCases are values with the verdict ValidateJSON must give: "" for
// storable, else a part of the error message. The PostgreSQL backend's
// tests check the same values against the database itself.
var jsonCases = []struct {
	raw, want string
}{
	{`null`, ""},
	{`{"a":[1,2.5,-3e-2,"x\u00e9\ud83d\ude00\u0000"]}`, ""},
	{`"\uFFFF\u2028"`, ""},
	{`1e131071`, ""},
	{`-1e131071`, ""},
	{`1e-16383`, ""},
	{`0e1000000`, ""},
	{`0.000001e-16377`, ""},
	{`12345.6789e131067`, ""},
	{`1e131072`, "numeric range"},
	{`123456789e131064`, "numeric range"},
	{`1e-16384`, "numeric range"},
	{`0e-1000000`, "numeric range"},
	{`0.0000000000000000000000000000000000000001e-16383`, "numeric range"},
	{`1e1000000`, "numeric range"},
	{`1e99999999999999999999999`, "numeric range"},
	{`"\ud83d"`, "lone UTF-16 surrogate"},
	{`"\ude00"`, "lone UTF-16 surrogate"},
	{`"\ud83d\u0041"`, "lone UTF-16 surrogate"},
	{`"\ud83dx"`, "lone UTF-16 surrogate"},
	{`"\ud83d\ud83d\ude00"`, "lone UTF-16 surrogate"},
	{`{"\udbff":1}`, "lone UTF-16 surrogate"},
	{"\"a\xffb\"", "invalid UTF-8 at byte 2"},
	{`{"a":`, "not valid JSON"},
	{strings.Repeat("[", 1000) + strings.Repeat("]", 1000), ""},
	{strings.Repeat("[", 1001) + strings.Repeat("]", 1001), "nested more than 1000 levels deep at byte 1000"},
	{strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000), "nested more than 1000 levels deep"},
}

func TestValidateJSON(t *testing.T) {
	for _, c := range jsonCases {
		err := backend.ValidateJSON([]byte(c.raw))
		short := c.raw
		if len(short) > 60 {
			short = short[:60] + "…"
		}
		switch {
		case c.want == "" && err != nil:
			t.Errorf("ValidateJSON(%s) = %v, want nil", short, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("ValidateJSON(%s) = %v, want an error containing %q", short, err, c.want)
		case err != nil && !errors.Is(err, backend.ErrInvalidArgument):
			t.Errorf("ValidateJSON(%s) = %v, want it to wrap ErrInvalidArgument", short, err)
		}
	}
}

// FuzzValidateJSON feeds ValidateJSON arbitrary bytes: it never panics,
// and it never accepts what is not valid UTF-8 JSON.
func FuzzValidateJSON(f *testing.F) {
	for _, c := range jsonCases {
		f.Add([]byte(c.raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		err := backend.ValidateJSON(raw) // must not panic
		if err == nil && len(raw) > 0 && (!json.Valid(raw) || !utf8.Valid(raw)) {
			t.Fatalf("ValidateJSON accepted %q, which is not valid UTF-8 JSON", raw)
		}
		if err != nil && !errors.Is(err, backend.ErrInvalidArgument) {
			t.Fatalf("ValidateJSON(%q) = %v, not wrapping ErrInvalidArgument", raw, err)
		}
	})
}
