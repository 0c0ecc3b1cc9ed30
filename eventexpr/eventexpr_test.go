package eventexpr

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

var order = Event{
	Name: "order.paid",
	ID:   "ev-1",
	Key:  "k1",
	Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	Data: map[string]any{"orderId": "o-7", "total": 120.0, "items": []any{"a", "b"}, "nested": map[string]any{"n": 3.0}},
}

func TestMatch(t *testing.T) {
	input := map[string]any{"orderId": "o-7", "min": 100.0}
	cases := []struct {
		name, src string
		want      bool
	}{
		{"equality with the input matches", `event.data.orderId == input.orderId`, true},
		{"an equality that differs does not match", `event.data.orderId == "o-8"`, false},
		{"a double compares with an int literal", `event.data.total > 100`, true},
		{"the event's name, id, key are strings", `event.name == "order.paid" && event.id == "ev-1" && event.key == "k1"`, true},
		{"the time is a timestamp", `event.time > timestamp("2026-01-01T00:00:00Z")`, true},
		{"in tests for a key", `"coupon" in event.data`, false},
		{"has tests for the last field", `!has(event.data.coupon) && has(event.data.nested.n)`, true},
		{"optional selection gives a default", `event.data.?coupon.orValue("none") == "none"`, true},
		{"macros work", `event.data.items.exists(i, i == "b")`, true},
		{"index syntax reads keys", `event["data"]["nested"]["n"] == 3`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x, err := Compile(c.src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := x.Match(context.Background(), order, input)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("Match(%s) = %v, want %v", c.src, got, c.want)
			}
		})
	}
}

func TestCompileErrorsSayWhatAndWhere(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"syntax error", "event.data.x ==", "1:16"},
		{"undeclared variable", "evnt.name == \"a\"", "1:1: undeclared reference to 'evnt'"},
		{"not a bool", `event.name + "x"`, "must be a bool, is string"},
		{"type error", `event.name == 1 + "a"`, "no matching overload"},
		{"second line", "event.name == \"a\" &&\n  )", "2:3"},
		{"empty", "  ", "empty expression"},
		{"too deep", strings.Repeat("(", 100) + "true" + strings.Repeat(")", 100), "recursion"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Compile(c.src)
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("Compile(%q) = %v, want a *CompileError", c.src, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Compile(%q) error %q does not contain %q", c.src, err, c.want)
			}
		})
	}
	t.Run("a source over 4 KiB is refused", func(t *testing.T) {
		_, err := Compile(`event.name == "` + strings.Repeat("x", MaxSourceBytes) + `"`)
		if !errors.Is(err, ErrTooLong) {
			t.Fatalf("err = %v, want ErrTooLong", err)
		}
	})
}

func TestEvalErrors(t *testing.T) {
	t.Run("a missing key is an error, not false", func(t *testing.T) {
		x, err := Compile(`event.data.coupon == "c"`)
		if err != nil {
			t.Fatal(err)
		}
		ok, err := x.Match(context.Background(), order, nil)
		var ee *EvalError
		if ok || !errors.As(err, &ee) || !strings.Contains(err.Error(), "no such key") {
			t.Fatalf("Match = %v, %v; want false and a no such key *EvalError", ok, err)
		}
	})
	t.Run("a dyn result that is not a bool", func(t *testing.T) {
		x, err := Compile(`event.data.orderId`)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := x.Match(context.Background(), order, nil); ok || err == nil || !strings.Contains(err.Error(), "not bool") {
			t.Fatalf("Match = %v, %v; want a not bool error", ok, err)
		}
	})
	t.Run("the cost limit stops an expensive expression", func(t *testing.T) {
		x, err := Compile(`[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, a+b+c+d+e+f > 0))))))`)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := x.Match(context.Background(), order, nil); ok || err == nil || !strings.Contains(err.Error(), "cost limit") {
			t.Fatalf("Match = %v, %v; want a cost limit error", ok, err)
		}
	})
	t.Run("a done context stops the evaluation", func(t *testing.T) {
		x, err := Compile(`[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, a+b > 0))`)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if ok, err := x.Match(ctx, order, nil); ok || err == nil {
			t.Fatalf("Match = %v, %v; want an error", ok, err)
		}
	})
}

func TestCompileIsCached(t *testing.T) {
	a, err := Compile(`event.name == "cached"`)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Compile(`event.name == "cached"`)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("the second Compile of one source did not return the cached expression")
	}
}

func TestIndexKeys(t *testing.T) {
	input := map[string]any{"orderId": "o-7", "n": 3}
	cases := []struct {
		name, src string
		path      []string
		value     string
	}{
		{"event on the left", `event.data.orderId == input.orderId`, []string{"data", "orderId"}, "s:o-7"},
		{"event on the right", `input.orderId == event.data.orderId`, []string{"data", "orderId"}, "s:o-7"},
		{"a constant right-hand side", `event.key == "k1"`, []string{"key"}, "s:k1"},
		{"inside a conjunction", `event.data.total > 1.0 && (event["data"]["nested"]["n"] == input.n && true)`, []string{"data", "nested", "n"}, "n:3"},
		{"an expression over input", `event.data.orderId == input.orderId + "-x"`, []string{"data", "orderId"}, "s:o-7-x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x, err := Compile(c.src)
			if err != nil {
				t.Fatal(err)
			}
			keys := x.IndexKeys()
			if len(keys) == 0 {
				t.Fatalf("no index key in %s", c.src)
			}
			if !reflect.DeepEqual(keys[0].Path, c.path) {
				t.Fatalf("path = %v, want %v", keys[0].Path, c.path)
			}
			v, ok, err := keys[0].Value(context.Background(), input)
			if err != nil || !ok || v != c.value {
				t.Fatalf("Value = %q, %v, %v; want %q", v, ok, err, c.value)
			}
		})
	}
	for _, src := range []string{
		`event.data.orderId == input.orderId || event.name == "x"`, // a disjunction does not imply the equality
		`event.data.orderId == event.data.other`,                   // the other side reads event
		`!(event.data.orderId == input.orderId)`,
		`event.data.orderId != input.orderId`,
		`has(event.data.orderId)`,
		`event.data.?orderId == optional.of(input.orderId)`,
	} {
		x, err := Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		if k := x.IndexKeys(); len(k) != 0 {
			t.Errorf("%s: IndexKeys = %+v, want none", src, k)
		}
	}
}

func TestCanonicalAgreesWithCELEquality(t *testing.T) {
	// For every pair of values CEL finds equal, PathValue of the event side
	// and Value of the input side must agree: the index may only drop waits
	// that cannot match.
	values := []any{"a", "", "1", 1.0, -0.0, 0.0, 2.5, 1e300, float64(1 << 53), true, false, nil, int64(1), uint64(1)}
	for _, ev := range values {
		for _, in := range values {
			data := map[string]any{"v": ev}
			switch ev.(type) {
			case int64, uint64:
				continue // JSON payloads hold doubles only
			}
			x, err := Compile(`event.data.v == input.v`)
			if err != nil {
				t.Fatal(err)
			}
			e := Event{Name: "n", Data: data}
			eq, err := x.Match(context.Background(), e, map[string]any{"v": in})
			if err != nil {
				t.Fatal(err)
			}
			left, lok := PathValue(e, x.IndexKeys()[0].Path)
			right, rok, err := x.IndexKeys()[0].Value(context.Background(), map[string]any{"v": in})
			if err != nil {
				t.Fatal(err)
			}
			if eq && (!lok || !rok || left != right) {
				t.Errorf("%#v == %#v in CEL but forms %q (%v) and %q (%v)", ev, in, left, lok, right, rok)
			}
		}
	}
}

func TestPathValue(t *testing.T) {
	for _, c := range []struct {
		path []string
		want string
		ok   bool
	}{
		{[]string{"name"}, "s:order.paid", true},
		{[]string{"data", "total"}, "n:120", true},
		{[]string{"data", "nested", "n"}, "n:3", true},
		{[]string{"data", "missing"}, "", false},
		{[]string{"data", "items"}, "", false},
		{[]string{"time"}, "", false},
		{[]string{"other"}, "", false},
	} {
		got, ok := PathValue(order, c.path)
		if got != c.want || ok != c.ok {
			t.Errorf("PathValue(%v) = %q, %v; want %q, %v", c.path, got, ok, c.want, c.ok)
		}
	}
	k := IndexKey{Path: []string{"data", "a.b"}}
	p, err := ParsePathKey(k.PathKey())
	if err != nil || !reflect.DeepEqual(p, k.Path) {
		t.Fatalf("ParsePathKey(PathKey) = %v, %v", p, err)
	}
}

// FuzzCompile feeds arbitrary sources to Compile and the compiled
// expressions to Match and IndexKeys: nothing may panic, an accepted
// expression must evaluate to a bool or an error, and an index key must
// hold whenever the expression is true.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`event.data.orderId == input.orderId`,
		`event.name == "a" && event.data.total > 10.0`,
		`"k" in event.data || event.key == input.k`,
		`event.data.items.exists(i, i == input.orderId)`,
		`event["data"]["orderId"] == input.orderId && event.data.?x.orValue(1) == 1`,
		`((((`, `event.`, `1 / 0 == 1`, `size(event.data) > 2`,
	} {
		f.Add(s)
	}
	input := map[string]any{"orderId": "o-7", "k": "k1"}
	f.Fuzz(func(t *testing.T, src string) {
		x, err := Compile(src)
		if err != nil {
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("Compile(%q) error is %T, not *CompileError", src, err)
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ok, err := x.Match(ctx, order, input)
		if err != nil {
			return
		}
		for _, k := range x.IndexKeys() {
			want, vok, verr := k.Value(ctx, input)
			if !ok || verr != nil || !vok {
				continue
			}
			got, gok := PathValue(order, k.Path)
			if !gok || got != want {
				t.Fatalf("%q matched but its index key %v: event has %q (%v), input side %q", src, k.Path, got, gok, want)
			}
		}
	})
}
