package postgres

import (
	"bytes"
	"encoding/json"
	"strings"
)

// PostgreSQL's jsonb refuses the character U+0000 in strings and keys
// ("unsupported Unicode escape sequence"), yet the engine promises that any
// JSON value round-trips. So a value holding a string (or key) with U+0000
// is stored with some of its strings escaped:
//
//	escaped(s) = U+0001 + s with U+0001 → U+0001 '1' and U+0000 → U+0001 '0'
//
// applied, in such a value only, to every string that contains U+0000 or
// starts with U+0001, so that in a stored escaped value exactly the strings
// starting with U+0001 are escaped ones, and decoding is unambiguous.
//
// What decoding cannot be is a rule on the value alone: jsonb refuses only
// U+0000 and lone surrogates, neither of which a JavaScript JSON text that
// PostgreSQL accepts can hold, so every string the escape produces is one
// the TypeScript SDK can store too ("\u0001\u00010", three characters, is
// the escaped form of "\u0000"). The mark that a value is escaped lives
// outside it: the Go SDK records each escaped value it stores, in the same
// transaction, in openworkflow_go_escaped_json (go migration 3; escapes.go),
// and a value read back is decoded only when that record names its row, its
// column and its exact text. Everything else — whatever the TypeScript SDK
// wrote, a TypeScript write over a Go value included — reads back as
// stored. Values without U+0000, all but a vanishing few, are stored as
// given and never recorded, so writes cost nothing more and their structure
// stays queryable in SQL (context->>'signal'); a read costs one lookup only
// for a value holding a string that starts with U+0001.
//
// The TypeScript SDK, which cannot store U+0000 at all, reads a Go value
// holding it in the escaped form.

const escapeChar = '\x01'

var (
	// nulEscape is how U+0000 appears in JSON text (jsonb never renders
	// it, and Go's encoders write it so).
	nulEscape = []byte(`\u0000`)
	// escapedStart is how a string starting with U+0001 begins in the text
	// of a jsonb value: only a value containing it may need decoding.
	escapedStart = []byte(`"\u0001`)
)

// encodeJSON returns raw made storable in jsonb, and whether it had to
// escape anything: raw itself, false, for a value without U+0000 (checked
// first with a byte search, so the common case costs no parse). raw must
// be valid JSON.
func encodeJSON(raw []byte) ([]byte, bool) {
	if !bytes.Contains(raw, nulEscape) || !hasNUL(raw) {
		return raw, false
	}
	return rewriteStrings(raw, escapeString), true
}

// decodeEscaped undoes encodeJSON on a value read back, which the caller
// knows Go stored escaped (escapes.go): every string starting with U+0001
// is decoded.
func decodeEscaped(raw []byte) []byte {
	return rewriteStrings(raw, unescapeString)
}

// mayBeEscaped reports whether a value read back holds a string starting
// with U+0001, the only kind of value that may be one Go stored escaped.
func mayBeEscaped(raw []byte) bool {
	return raw != nil && bytes.Contains(raw, escapedStart)
}

// hasNUL reports whether a string or key of the JSON text raw contains
// U+0000 (rather than, say, the six characters `\u0000` escaped).
func hasNUL(raw []byte) bool {
	found := false
	rewriteStrings(raw, func(s string) (string, bool) {
		found = found || strings.IndexByte(s, 0) >= 0
		return s, false
	})
	return found
}

// escapeString escapes s if it contains U+0000 or starts with U+0001 (in a
// value that holds U+0000 somewhere); any other string is kept.
func escapeString(s string) (string, bool) {
	if strings.IndexByte(s, 0) < 0 && !strings.HasPrefix(s, string(escapeChar)) {
		return s, false
	}
	var sb strings.Builder
	sb.Grow(len(s) + 2)
	sb.WriteByte(escapeChar)
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case 0:
			sb.WriteString("\x010")
		case escapeChar:
			sb.WriteString("\x011")
		default:
			sb.WriteByte(s[i])
		}
	}
	return sb.String(), true
}

// unescapeString undoes escapeString. A string not of the escaped form —
// which a value Go stored escaped does not hold — is kept.
func unescapeString(s string) (string, bool) {
	if s == "" || s[0] != escapeChar {
		return s, false
	}
	var sb strings.Builder
	sb.Grow(len(s))
	for i := 1; i < len(s); i++ {
		if s[i] != escapeChar {
			sb.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) || (s[i+1] != '0' && s[i+1] != '1') {
			return s, false
		}
		sb.WriteByte(s[i+1] - '0') // '0' → U+0000, '1' → U+0001
		i++
	}
	return sb.String(), true
}

// rewriteStrings copies the JSON text raw, replacing each string token
// (values and keys) for which f reports a change; everything else is kept
// byte for byte. raw must be valid JSON.
func rewriteStrings(raw []byte, f func(string) (string, bool)) []byte {
	out := make([]byte, 0, len(raw)+16)
	for i := 0; i < len(raw); {
		if raw[i] != '"' {
			out = append(out, raw[i])
			i++
			continue
		}
		end := i + 1
		for end < len(raw) && raw[end] != '"' {
			if raw[end] == '\\' {
				end++
			}
			end++
		}
		end++ // past the closing quote
		token := raw[i:min(end, len(raw))]
		var s string
		if bytes.IndexByte(token, '\\') < 0 && len(token) >= 2 {
			s = string(token[1 : len(token)-1]) // no escapes: the text is the string
		} else if err := json.Unmarshal(token, &s); err != nil {
			out = append(out, token...)
			i = end
			continue
		}
		if r, changed := f(s); changed {
			var sb strings.Builder
			writeJSString(&sb, r)
			out = append(out, sb.String()...)
		} else {
			out = append(out, token...)
		}
		i = end
	}
	return out
}
