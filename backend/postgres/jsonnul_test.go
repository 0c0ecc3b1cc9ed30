package postgres

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscapingRoundTripsAndLeavesValuesWithoutNULAlone(t *testing.T) {
	for _, v := range []string{
		`"plain"`,
		`"a\u0000b"`,
		`{"k\u0000":"v","n":12345678901234567890123}`,
		`"\u0001starts with the escape char"`,
		`"\u0001\u0000\u0001"`,
		`["\\u0000 is not a NUL", "x\u00010"]`,
		`{"nested":[{"\u0000":"\u0000\u0000"}]}`,
		`{"a":"\u0000","b":"\u0001\u00010","\u0001":"\u00011","c":"\u0001"}`,
		`"\u0001\u00010"`,
		`{"\u0001k":["\u0001\u00011"]}`,
	} {
		stored, escaped := encodeJSON([]byte(v))
		var want, probe any
		must(t, json.Unmarshal([]byte(v), &want))
		if err := json.Unmarshal(stored, &probe); err != nil {
			t.Fatalf("%s: stored form %s is not JSON: %v", v, stored, err)
		}
		if containsNUL(probe) {
			t.Errorf("%s: stored form %s still holds U+0000", v, stored)
		}
		if escaped != containsNUL(want) {
			t.Errorf("%s: escaped = %v, want %v (only values holding U+0000 are escaped)", v, escaped, containsNUL(want))
		}
		if !escaped {
			if string(stored) != v {
				t.Errorf("%s without U+0000 stored as %s: it must be stored as given", v, stored)
			}
			continue
		}
		var got any
		must(t, json.Unmarshal(decodeEscaped(stored), &got))
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: stored as %s, decoded as %v", v, stored, got)
		}
	}
}

// Every value holding a string that starts with U+0001 is a candidate for
// decoding (no false negative); most others are not.
func TestOnlyTheBytesOfAStringStartingWithU0001MarkACandidate(t *testing.T) {
	for v, want := range map[string]bool{
		`"\u0001x"`:         true,
		`{"\u0001":1}`:      true,
		`"x\u0001"`:         false, // U+0001 not first: never an escaped string
		`"\\u0001"`:         false, // a backslash, then "u0001"
		`{"a":"b"}`:         false,
		`["a","\u00010"]`:   true,
		`"\"\u0001"`:        true, // a false positive: it costs a lookup, no more
		`null`:              false,
		`"\u00011\u00010x"`: true,
	} {
		if got := mayBeEscaped([]byte(v)); got != want {
			t.Errorf("mayBeEscaped(%s) = %v, want %v", v, got, want)
		}
	}
	if mayBeEscaped(nil) {
		t.Error("mayBeEscaped(nil)")
	}
}

// FuzzEscaping: for any JSON value built around a string s, escaping then
// decoding gives the value back, the stored form holds no U+0000, and a
// value without U+0000 is stored byte for byte as given.
func FuzzEscaping(f *testing.F) {
	for _, s := range []string{"", "\x00", "\x01", "\x01\x010", "\x010", "\x011", "a\x00b\x01c", "\U0001F600\x00", "\ufffd", "\x01\x01\x01"} {
		f.Add(s, s+"k")
	}
	f.Fuzz(func(t *testing.T, s, k string) {
		if !utf8.ValidString(s) || !utf8.ValidString(k) {
			t.Skip("Go's JSON encoders write invalid UTF-8 as U+FFFD")
		}
		v := map[string]any{k: []any{s, map[string]any{s: k}, "\x01" + s, 1.5}, "plain": s + k}
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		stored, escaped := encodeJSON(raw)
		if strings.Contains(string(stored), `\u0000`) {
			t.Fatalf("stored form %s holds U+0000", stored)
		}
		hasNUL := strings.ContainsRune(s+k, 0)
		if escaped != hasNUL {
			t.Fatalf("escaped = %v for a value with U+0000 %v", escaped, hasNUL)
		}
		back := stored
		if escaped {
			back = decodeEscaped(stored)
		} else if string(stored) != string(raw) {
			t.Fatalf("a value without U+0000 was rewritten: %s → %s", raw, stored)
		}
		var want, got any
		must(t, json.Unmarshal(raw, &want))
		must(t, json.Unmarshal(back, &got))
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("%s stored as %s read back as %s", raw, stored, back)
		}
	})
}

func containsNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsRune(v, 0)
	case []any:
		for _, e := range v {
			if containsNUL(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if containsNUL(k) || containsNUL(e) {
				return true
			}
		}
	}
	return false
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
