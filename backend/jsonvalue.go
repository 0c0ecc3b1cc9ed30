package backend

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// MaxJSONDepth is the deepest nesting of arrays and objects a stored JSON
// value may have. PostgreSQL parses jsonb recursively and refuses values
// nested about 10,000 levels or more deep ("stack depth limit exceeded",
// with the default max_stack_depth of 2 MB), and Go's encoding/json refuses
// to decode beyond 10,000 levels; 1,000 keeps well clear of both.
const MaxJSONDepth = 1000

// ValidateJSON reports whether raw is a JSON value that every backend
// stores and reads back unchanged, and says what is wrong and at which
// byte offset when it is not:
//
//   - raw is syntactically valid JSON (as [json.Valid]);
//   - raw is valid UTF-8 (PostgreSQL refuses invalid bytes: SQLSTATE 22021);
//   - no string holds a lone UTF-16 surrogate escape such as "\ud83d", as
//     a truncated API body may (PostgreSQL: 22P02);
//   - every number fits PostgreSQL's numeric type: at most 131,072 digits
//     before the decimal point and 16,383 after it, the exponent applied
//     (1e1000000 and a *big.Int of 10^200000 do not: SQLSTATE 22003);
//   - arrays and objects nest at most [MaxJSONDepth] levels deep.
//
// SQLite would store such values as text, but the engine refuses them on
// both backends alike, so that a value behaves the same whichever backend
// holds it. A nil or empty raw is valid (it stands for SQL NULL). The error
// wraps [ErrInvalidArgument].
func ValidateJSON(raw []byte) error {
	if len(raw) == 0 {
		return nil
	}
	if !utf8.Valid(raw) {
		return fmt.Errorf("%w: invalid UTF-8 at byte %d", ErrInvalidArgument, invalidUTF8At(raw))
	}
	if !json.Valid(raw) {
		// encoding/json also refuses nesting beyond 10,000 levels: say so
		// in our terms.
		if at := tooDeepAt(raw); at >= 0 {
			return fmt.Errorf("%w: nested more than %d levels deep at byte %d", ErrInvalidArgument, MaxJSONDepth, at)
		}
		var v any
		err := json.Unmarshal(raw, &v)
		return fmt.Errorf("%w: not valid JSON: %v", ErrInvalidArgument, err)
	}
	return scanJSON(raw)
}

// tooDeepAt is the offset at which raw's arrays and objects, counted
// outside strings, nest more than MaxJSONDepth deep; -1 if they never do.
// raw need not be valid JSON.
func tooDeepAt(raw []byte) int {
	depth, inString := 0, false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			if depth++; depth > MaxJSONDepth {
				return i
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return -1
}

// invalidUTF8At is the offset of the first byte of raw that is not valid
// UTF-8.
func invalidUTF8At(raw []byte) int {
	for i := 0; i < len(raw); {
		r, n := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(raw)
}

// scanJSON checks the storage limits of ValidateJSON on syntactically
// valid JSON: surrogate escapes, numbers and depth.
func scanJSON(raw []byte) error {
	depth := 0
	for i := 0; i < len(raw); {
		switch c := raw[i]; {
		case c == '"':
			end, err := scanString(raw, i)
			if err != nil {
				return err
			}
			i = end
		case c == '[' || c == '{':
			depth++
			if depth > MaxJSONDepth {
				return fmt.Errorf("%w: nested more than %d levels deep at byte %d", ErrInvalidArgument, MaxJSONDepth, i)
			}
			i++
		case c == ']' || c == '}':
			depth--
			i++
		case c == '-' || (c >= '0' && c <= '9'):
			end, err := scanNumber(raw, i)
			if err != nil {
				return err
			}
			i = end
		default:
			i++
		}
	}
	return nil
}

// scanString checks the string token starting at raw[start] (a quote) for
// lone surrogate escapes and returns the offset just past its closing
// quote.
func scanString(raw []byte, start int) (int, error) {
	i := start + 1
	pendingHigh := -1 // offset of a high surrogate escape awaiting its low half
	for i < len(raw) {
		switch raw[i] {
		case '"':
			if pendingHigh >= 0 {
				return 0, loneSurrogate(raw, pendingHigh)
			}
			return i + 1, nil
		case '\\':
			if raw[i+1] != 'u' {
				if pendingHigh >= 0 {
					return 0, loneSurrogate(raw, pendingHigh)
				}
				i += 2
				continue
			}
			u := hex4(raw[i+2 : i+6])
			switch {
			case u >= 0xD800 && u <= 0xDBFF:
				if pendingHigh >= 0 {
					return 0, loneSurrogate(raw, pendingHigh)
				}
				pendingHigh = i
			case u >= 0xDC00 && u <= 0xDFFF:
				if pendingHigh < 0 {
					return 0, loneSurrogate(raw, i)
				}
				pendingHigh = -1
			default:
				if pendingHigh >= 0 {
					return 0, loneSurrogate(raw, pendingHigh)
				}
			}
			i += 6
		default:
			if pendingHigh >= 0 {
				return 0, loneSurrogate(raw, pendingHigh)
			}
			i++
		}
	}
	return i, nil
}

func loneSurrogate(raw []byte, at int) error {
	return fmt.Errorf("%w: lone UTF-16 surrogate %s at byte %d (a string cut in the middle of a character?)",
		ErrInvalidArgument, raw[at:at+6], at)
}

// hex4 decodes four hexadecimal digits (valid JSON guarantees them).
func hex4(b []byte) int {
	v := 0
	for _, c := range b {
		v <<= 4
		switch {
		case c >= '0' && c <= '9':
			v |= int(c - '0')
		case c >= 'a' && c <= 'f':
			v |= int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			v |= int(c-'A') + 10
		}
	}
	return v
}

// PostgreSQL's numeric limits (src/include/utils/numeric.h): a value's
// first significant digit at most 131,071 places left of the decimal point
// (NUMERIC_WEIGHT_MAX 32767 base-10000 digits), and at most 16,383 digits
// displayed after it (NUMERIC_DSCALE_MAX).
const (
	maxNumericLeadingExponent = 131071
	maxNumericScale           = 16383
)

// scanNumber checks that the number token starting at raw[start] fits
// PostgreSQL's numeric type and returns the offset just past it.
func scanNumber(raw []byte, start int) (int, error) {
	i := start
	if raw[i] == '-' {
		i++
	}
	intStart := i
	for i < len(raw) && raw[i] >= '0' && raw[i] <= '9' {
		i++
	}
	intDigits := raw[intStart:i]
	var fracDigits []byte
	if i < len(raw) && raw[i] == '.' {
		i++
		fs := i
		for i < len(raw) && raw[i] >= '0' && raw[i] <= '9' {
			i++
		}
		fracDigits = raw[fs:i]
	}
	exp := int64(0)
	if i < len(raw) && (raw[i] == 'e' || raw[i] == 'E') {
		i++
		neg := false
		if raw[i] == '+' || raw[i] == '-' {
			neg = raw[i] == '-'
			i++
		}
		for i < len(raw) && raw[i] >= '0' && raw[i] <= '9' {
			if exp < 1<<40 { // saturate: any larger exponent is out of range anyway
				exp = exp*10 + int64(raw[i]-'0')
			}
			i++
		}
		if neg {
			exp = -exp
		}
	}
	tooBig := func() error {
		return fmt.Errorf("%w: number %s at byte %d is out of PostgreSQL's numeric range (at most %d digits before the decimal point and %d after)",
			ErrInvalidArgument, abbreviate(raw[start:i]), start, maxNumericLeadingExponent+1, maxNumericScale)
	}
	if scale := int64(len(fracDigits)) - exp; scale > maxNumericScale {
		return 0, tooBig()
	}
	// The decimal exponent of the first significant digit; a zero has none.
	lead, nonzero := int64(0), false
	for k, d := range intDigits {
		if d != '0' {
			lead, nonzero = int64(len(intDigits)-1-k), true
			break
		}
	}
	if !nonzero {
		for k, d := range fracDigits {
			if d != '0' {
				lead, nonzero = -int64(k+1), true
				break
			}
		}
	}
	if nonzero && lead+exp > maxNumericLeadingExponent {
		return 0, tooBig()
	}
	return i, nil
}

// abbreviate shortens a long token for an error message.
func abbreviate(b []byte) string {
	if len(b) <= 40 {
		return string(b)
	}
	return fmt.Sprintf("%s…%s (%d characters)", b[:20], b[len(b)-10:], len(b))
}
