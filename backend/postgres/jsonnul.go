package postgres

import (
	"bytes"
	"encoding/json"
	"strings"
)

// PostgreSQL's jsonb refuses the character U+0000 in strings and keys
// ("unsupported Unicode escape sequence"), yet the engine promises that any
// JSON value round-trips. So before a value is written, every string (or
// key) that contains U+0000 is stored escaped:
//
//	stored = U+0001 + s with U+0001 → U+0001 '1' and U+0000 → U+0001 '0'
//
// and a stored string is unescaped when read only if it is of exactly that
// form and decodes to a string with U+0000 (see isEscaped), so strings the
// TypeScript SDK writes, U+0001 prefix or not, read back unchanged.
// Values without such strings — all but a vanishing few — are stored as
// given and read back as PostgreSQL returns them, so their structure stays
// queryable in SQL (context->>'signal'). The TypeScript SDK, which cannot
// write U+0000 at all, would see the escaped form.

const escapeChar = '\x01'

var (
	nulEscape  = []byte(`\u0000`)
	markEscape = []byte(`\u0001`)
)

// encodeJSON returns raw made storable in jsonb (raw itself when nothing
// needs escaping, the common case).
func encodeJSON(raw []byte) []byte {
	if !bytes.Contains(raw, nulEscape) && !bytes.Contains(raw, markEscape) {
		return raw
	}
	return rewriteStrings(raw, escapeString)
}

// decodeJSON undoes encodeJSON on a value read from the database.
func decodeJSON(raw []byte) []byte {
	if raw == nil || !bytes.Contains(raw, markEscape) {
		return raw
	}
	return rewriteStrings(raw, unescapeString)
}

// escapeString escapes s if it contains U+0000, or if it already reads as
// an escaped string (so that reading it back cannot change it). Any other
// string — one starting with U+0001 included, such as the TypeScript SDK
// may write — is stored as is.
func escapeString(s string) (string, bool) {
	if !strings.ContainsRune(s, 0) && !isEscaped(s) {
		return s, false
	}
	var sb strings.Builder
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

// unescapeString undoes escapeString: only a string that reads as escaped
// is changed.
func unescapeString(s string) (string, bool) {
	if !isEscaped(s) {
		return s, false
	}
	d, _ := decodeEscaped(s)
	return d, true
}

// isEscaped reports whether s is what escapeString makes: U+0001, then text
// in which every U+0001 is followed by '0' or '1', decoding to a string that
// contains U+0000 or is itself escaped.
func isEscaped(s string) bool {
	d, ok := decodeEscaped(s)
	return ok && (strings.ContainsRune(d, 0) || isEscaped(d))
}

// decodeEscaped decodes an escaped string; ok is false when s is not of the
// escaped form.
func decodeEscaped(s string) (string, bool) {
	if s == "" || s[0] != escapeChar {
		return "", false
	}
	var sb strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != escapeChar {
			sb.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) || (s[i+1] != '0' && s[i+1] != '1') {
			return "", false
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
		if err := json.Unmarshal(token, &s); err == nil {
			if r, changed := f(s); changed {
				var sb strings.Builder
				writeJSString(&sb, r)
				out = append(out, sb.String()...)
				i = end
				continue
			}
		}
		out = append(out, token...)
		i = end
	}
	return out
}
