package postgres

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestNULEscapingRoundTrips(t *testing.T) {
	for _, v := range []string{
		`"plain"`,
		`"a\u0000b"`,
		`{"k\u0000":"v","n":12345678901234567890123}`,
		`"\u0001starts with the escape char"`,
		`"\u0001\u0000\u0001"`,
		`["\\u0000 is not a NUL", "x\u00010"]`,
		`{"nested":[{"\u0000":"\u0000\u0000"}]}`,
	} {
		stored := encodeJSON([]byte(v))
		var probe any
		if err := json.Unmarshal(stored, &probe); err != nil {
			t.Fatalf("%s: stored form %s is not JSON: %v", v, stored, err)
		}
		if containsNUL(probe) {
			t.Errorf("%s: stored form %s still holds U+0000", v, stored)
		}
		back := decodeJSON(stored)
		var want, got any
		_ = json.Unmarshal([]byte(v), &want)
		_ = json.Unmarshal(back, &got)
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: read back as %s", v, back)
		}
	}
	if got := encodeJSON([]byte(`{"a": 1}`)); string(got) != `{"a": 1}` {
		t.Errorf("a value without NUL was rewritten: %s", got)
	}
}

func containsNUL(v any) bool {
	switch v := v.(type) {
	case string:
		for _, r := range v {
			if r == 0 {
				return true
			}
		}
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

func TestStringsWithoutNULAreStoredAsGivenSoOtherSDKsReadThemUnchanged(t *testing.T) {
	for _, v := range []string{
		`"\u0001abc"`,                   // what the TypeScript SDK may write
		`"\u00010"`,                     // looks escaped but decodes to no NUL
		`{"\u0001k":["\u0001\u00011"]}`, // escaped form, decoding to "\u0001" only
	} {
		if got := encodeJSON([]byte(v)); string(got) != v {
			t.Errorf("%s stored as %s: a string without U+0000 must be stored as given", v, got)
		}
		if got := decodeJSON([]byte(v)); string(got) != v {
			t.Errorf("%s written by another SDK read back as %s", v, got)
		}
	}
	// A string that reads as escaped is itself escaped, so it round-trips.
	tricky := `"\u0001\u00010"` // decodes to "\u0000"
	var want, got any
	_ = json.Unmarshal([]byte(tricky), &want)
	_ = json.Unmarshal(decodeJSON(encodeJSON([]byte(tricky))), &got)
	if !reflect.DeepEqual(want, got) {
		t.Errorf("%s read back as %v", tricky, got)
	}
}
