package backend

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// SameJSON reports whether a and b hold the same JSON value as a store
// gives it back: object members compared by name whatever their order
// (of a name given twice, the last counts, as PostgreSQL's jsonb keeps
// it), whitespace aside, numbers by their exact decimal value (1e2, 100
// and 100.0 are the same; PostgreSQL's jsonb rewrites exponents), strings by their
// characters (escapes decoded). nil (SQL NULL) is the same as JSON null.
// A value that is not valid JSON is the same only as the same bytes.
//
// A start whose idempotency key matched an earlier run compares that
// run's stored input with its own with SameJSON, to tell a replay from a
// start whose input was dropped ([WorkflowRun.Reused]).
func SameJSON(a, b json.RawMessage) bool {
	if len(bytes.TrimSpace(a)) == 0 {
		a = json.RawMessage("null")
	}
	if len(bytes.TrimSpace(b)) == 0 {
		b = json.RawMessage("null")
	}
	va, errA := decodeNumbers(a)
	vb, errB := decodeNumbers(b)
	if errA != nil || errB != nil {
		return bytes.Equal(a, b)
	}
	return sameValue(va, vb)
}

// decodeNumbers decodes raw keeping numbers as their text.
func decodeNumbers(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func sameValue(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !sameValue(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		return x == y || normalNumber(string(x)) == normalNumber(string(y))
	default: // string, bool, nil
		return a == b
	}
}

// normalNumber writes the JSON number n (valid, as the decoder checked
// it) as sign, significant digits and exponent, "-|15|-1" for -1.50e0,
// so that two numbers of one value have one form. It works on the text,
// in time linear in its length: 1e999999999 is not expanded.
func normalNumber(n string) string {
	neg := strings.HasPrefix(n, "-")
	n = strings.TrimPrefix(n, "-")
	mant, expText, _ := strings.Cut(strings.ToLower(n), "e")
	exp, err := strconv.ParseInt(expText, 10, 64)
	if expText == "" {
		exp, err = 0, nil
	}
	if err != nil {
		return n // an exponent beyond int64: compared as written
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	exp -= int64(len(frac))
	digits = strings.TrimLeft(digits, "0")
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	if trimmed == "" {
		return "0"
	}
	sign := "+"
	if neg {
		sign = "-"
	}
	return sign + "|" + trimmed + "|" + strconv.FormatInt(exp, 10)
}
