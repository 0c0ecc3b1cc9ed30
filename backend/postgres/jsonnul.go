package postgres

import (
	"bytes"
	"encoding/json"
	"strings"
)

// PostgreSQL's jsonb refuses the character U+0000 in strings and keys
// ("unsupported Unicode escape sequence"), yet the engine promises that any
// JSON value round-trips. So before a value is written, every string (or
// key) that contains U+0000, or that starts with U+0001, is stored escaped:
//
//	stored = U+0001 + s with U+0001 → U+0001 '1' and U+0000 → U+0001 '0'
//
// and every stored string starting with U+0001 is unescaped when read.
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

func escapeString(s string) (string, bool) {
	if !strings.ContainsRune(s, 0) && (s == "" || s[0] != escapeChar) {
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

func unescapeString(s string) (string, bool) {
	if s == "" || s[0] != escapeChar {
		return s, false
	}
	var sb strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] == escapeChar && i+1 < len(s) && (s[i+1] == '0' || s[i+1] == '1') {
			sb.WriteByte(s[i+1] - '0') // '0' → U+0000, '1' → U+0001
			i++
			continue
		}
		sb.WriteByte(s[i])
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
