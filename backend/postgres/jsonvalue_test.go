package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
)

// TestValidateJSONAgreesWithJSONB asks PostgreSQL itself whether jsonb
// takes each of many values near its limits (numbers around numeric's
// range and scale, surrogate escapes, invalid UTF-8), and requires
// backend.ValidateJSON to say the same: what it accepts, jsonb stores;
// what jsonb refuses, it refuses first, with a message a person can act on
// instead of an SQLSTATE.
func TestValidateJSONAgreesWithJSONB(t *testing.T) {
	pool := pgtest.Pool(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	var values []string
	digits := func(n int) string {
		var sb strings.Builder
		for range n {
			sb.WriteByte(byte('0' + rng.IntN(10)))
		}
		return sb.String()
	}
	for range 400 {
		intPart := digits(rng.IntN(6))
		if intPart == "" {
			intPart = "0"
		}
		frac := ""
		if rng.IntN(2) == 0 {
			frac = "." + digits(1+rng.IntN(6))
		}
		var exp int
		switch rng.IntN(3) {
		case 0:
			exp = 131066 + rng.IntN(10)
		case 1:
			exp = -16390 + rng.IntN(12)
		default:
			exp = rng.IntN(100) - 50
		}
		values = append(values, fmt.Sprintf("%s%se%d", intPart, frac, exp))
	}
	values = append(values,
		`"\ud83d\ude00"`, `"\ud83d"`, `"\ude00"`, `"\ud800\ud800"`, `"x\udfff"`, `"\uffff"`,
		"\"\xc3\x28\"", "\"\xed\xa0\x80\"", `[1,{"a":"\u0041"}]`,
	)
	for _, v := range values {
		ours := backend.ValidateJSON([]byte(v))
		var ok bool
		dbErr := pool.QueryRow(ctx, `SELECT $1::text::jsonb IS NOT NULL`, v).Scan(&ok)
		if (ours == nil) != (dbErr == nil) {
			t.Errorf("%q: ValidateJSON says %v, jsonb says %v", v, ours, dbErr)
		}
	}
}
