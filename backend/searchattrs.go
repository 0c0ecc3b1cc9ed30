package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/openworkflow-go/openworkflow/runquery"
)

// SearchAttributes are a run's search attributes: typed, indexed
// key/value metadata that run queries filter on (attrs.<name>, package
// runquery), as Temporal's typed search attributes. Values are Go values
// of one of the types of [runquery.Types]:
//
//	keyword       string
//	keyword_list  []string (or []any of strings, as decoded JSON)
//	int           int, int8…int64, uint8…uint32, json.Number without fraction
//	float         float32, float64, json.Number
//	bool          bool
//	time          time.Time (stored to the millisecond on SQLite)
//
// A nil value, in an upsert, removes the attribute; an empty keyword list
// is stored as no attribute. The first value a namespace stores under a
// name fixes the name's type there (from its Go type: a string is a
// keyword, a whole float64 from decoded JSON an int); later values are
// converted to it when they can be (an int to a float, an RFC 3339 string
// to a time, a whole float to an int, a string to a one-member keyword
// list) and refused with [ErrInvalidSearchAttribute] otherwise. A read
// returns the types above: string, []string, int64, float64, bool,
// time.Time.
type SearchAttributes map[string]any

// Limits of search attributes, as Temporal's defaults
// (frontend.searchAttributesNumberOfKeysLimit, …SizeOfValueLimit,
// …TotalSizeLimit): at most MaxSearchAttributes names per run, each value
// at most MaxSearchAttributeValueBytes (a keyword list: its members
// together), all of a run's values at most MaxSearchAttributesBytes. A
// name is 1 to 64 ASCII letters, digits and underscores, not starting
// with a digit, and not a keyword of the query language.
const (
	MaxSearchAttributes          = 100
	MaxSearchAttributeValueBytes = 2 << 10
	MaxSearchAttributesBytes     = 40 << 10
)

// ErrInvalidSearchAttribute: a search attribute's name, value, type or
// size is refused (the message names the attribute). It wraps
// [ErrInvalidArgument].
var ErrInvalidSearchAttribute = fmt.Errorf("%w: invalid search attribute", ErrInvalidArgument)

var attrNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

var reservedAttrNames = []string{"and", "or", "not", "in", "is", "null", "true", "false", "starts_with"}

// ValidSearchAttributeName reports why name cannot name a search
// attribute, or nil.
func ValidSearchAttributeName(name string) error {
	if !attrNameRE.MatchString(name) {
		return fmt.Errorf("%w %q: a name is 1 to 64 ASCII letters, digits and underscores, not starting with a digit", ErrInvalidSearchAttribute, name)
	}
	if slices.Contains(reservedAttrNames, strings.ToLower(name)) {
		return fmt.Errorf("%w %q: the name is a keyword of the query language", ErrInvalidSearchAttribute, name)
	}
	return nil
}

// SearchAttributeValue is one stored value: Type, and the value in the
// field of that type (a keyword list has one per member, in order).
type SearchAttributeValue struct {
	Type    runquery.Type
	Keyword string
	Int     int64
	Float   float64
	Bool    bool
	Time    time.Time
}

// Validate checks the names, the count and the sizes of a's values and
// that each is of a supported Go type (nil allowed: an unset). It returns
// an error wrapping [ErrInvalidSearchAttribute] naming the attribute.
func (a SearchAttributes) Validate() error {
	if len(a) > MaxSearchAttributes {
		return fmt.Errorf("%w: %d attributes, more than the %d allowed", ErrInvalidSearchAttribute, len(a), MaxSearchAttributes)
	}
	total := 0
	for _, name := range a.Names() {
		if err := ValidSearchAttributeName(name); err != nil {
			return err
		}
		if a[name] == nil {
			continue
		}
		_, vals, err := InferSearchAttribute(name, a[name])
		if err != nil {
			return err
		}
		size := valuesSize(vals)
		if size > MaxSearchAttributeValueBytes {
			return fmt.Errorf("%w %q: its value takes %d bytes, more than the %d allowed", ErrInvalidSearchAttribute, name, size, MaxSearchAttributeValueBytes)
		}
		total += size
	}
	if total > MaxSearchAttributesBytes {
		return fmt.Errorf("%w: the values take %d bytes, more than the %d allowed", ErrInvalidSearchAttribute, total, MaxSearchAttributesBytes)
	}
	return nil
}

// Names returns a's names, sorted.
func (a SearchAttributes) Names() []string {
	names := make([]string, 0, len(a))
	for n := range a {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// valuesSize is the bytes a value counts against the limits: a keyword's
// length, 8 for a number, bool or time.
func valuesSize(vals []SearchAttributeValue) int {
	n := 0
	for _, v := range vals {
		if v.Type == runquery.Keyword || v.Type == runquery.KeywordList {
			n += len(v.Keyword)
		} else {
			n += 8
		}
	}
	return n
}

// SearchAttributeSize is the bytes vals count against the limits.
func SearchAttributeSize(vals []SearchAttributeValue) int { return valuesSize(vals) }

// InferSearchAttribute returns the type v's Go type gives a name on first
// use and v as stored values of that type; an unsupported Go type, a
// keyword that is not valid text ([ValidText]) or a list member that is
// not a string fails with [ErrInvalidSearchAttribute].
func InferSearchAttribute(name string, v any) (runquery.Type, []SearchAttributeValue, error) {
	bad := func(why string) (runquery.Type, []SearchAttributeValue, error) {
		return "", nil, fmt.Errorf("%w %q: %s", ErrInvalidSearchAttribute, name, why)
	}
	one := func(sv SearchAttributeValue) (runquery.Type, []SearchAttributeValue, error) {
		return sv.Type, []SearchAttributeValue{sv}, nil
	}
	switch x := v.(type) {
	case string:
		if !ValidText(x) {
			return bad("a keyword must be UTF-8 without NUL bytes")
		}
		return one(SearchAttributeValue{Type: runquery.Keyword, Keyword: x})
	case []string:
		return keywordList(name, x)
	case []any:
		ss := make([]string, len(x))
		for i, m := range x {
			s, ok := m.(string)
			if !ok {
				return bad(fmt.Sprintf("member %d of a keyword list is %T, not a string", i, m))
			}
			ss[i] = s
		}
		return keywordList(name, ss)
	case int:
		return one(SearchAttributeValue{Type: runquery.Int, Int: int64(x)})
	case int8:
		return one(SearchAttributeValue{Type: runquery.Int, Int: int64(x)})
	case int16:
		return one(SearchAttributeValue{Type: runquery.Int, Int: int64(x)})
	case int32:
		return one(SearchAttributeValue{Type: runquery.Int, Int: int64(x)})
	case int64:
		return one(SearchAttributeValue{Type: runquery.Int, Int: x})
	case uint8:
		return one(SearchAttributeValue{Type: runquery.Int, Int: int64(x)})
	case uint16:
		return one(SearchAttributeValue{Type: runquery.Int, Int: int64(x)})
	case uint32:
		return one(SearchAttributeValue{Type: runquery.Int, Int: int64(x)})
	case float32:
		return floatValue(name, float64(x))
	case float64:
		return floatValue(name, x)
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return one(SearchAttributeValue{Type: runquery.Int, Int: i})
		}
		f, err := x.Float64()
		if err != nil {
			return bad(fmt.Sprintf("%s is not a number in range", x))
		}
		return floatValue(name, f)
	case bool:
		return one(SearchAttributeValue{Type: runquery.Bool, Bool: x})
	case time.Time:
		return one(SearchAttributeValue{Type: runquery.Time, Time: x.UTC()})
	}
	return bad(fmt.Sprintf("a value of Go type %T is none of keyword, keyword list, int, float, bool, time", v))
}

func keywordList(name string, ss []string) (runquery.Type, []SearchAttributeValue, error) {
	vals := make([]SearchAttributeValue, len(ss))
	for i, s := range ss {
		if !ValidText(s) {
			return "", nil, fmt.Errorf("%w %q: member %d must be UTF-8 without NUL bytes", ErrInvalidSearchAttribute, name, i)
		}
		vals[i] = SearchAttributeValue{Type: runquery.KeywordList, Keyword: s}
	}
	return runquery.KeywordList, vals, nil
}

// floatValue types a float: an int when it is whole (decoded JSON has no
// ints), else a float; NaN and infinities are refused.
func floatValue(name string, f float64) (runquery.Type, []SearchAttributeValue, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", nil, fmt.Errorf("%w %q: %v is not a finite number", ErrInvalidSearchAttribute, name, f)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return runquery.Int, []SearchAttributeValue{{Type: runquery.Int, Int: int64(f)}}, nil
	}
	return runquery.Float, []SearchAttributeValue{{Type: runquery.Float, Float: f}}, nil
}

// CoerceSearchAttribute returns v as stored values of the declared type,
// converting what converts (see [SearchAttributes]), or an error wrapping
// [ErrInvalidSearchAttribute] naming the attribute and both types.
func CoerceSearchAttribute(name string, declared runquery.Type, v any) ([]SearchAttributeValue, error) {
	typ, vals, err := InferSearchAttribute(name, v)
	if err != nil {
		return nil, err
	}
	if typ == declared {
		return vals, nil
	}
	mismatch := fmt.Errorf("%w %q: it is declared %s in this namespace; a %s value cannot be stored", ErrInvalidSearchAttribute, name, declared, typ)
	switch {
	case declared == runquery.Float && typ == runquery.Int:
		return []SearchAttributeValue{{Type: runquery.Float, Float: float64(vals[0].Int)}}, nil
	case declared == runquery.Int && typ == runquery.Float:
		return nil, mismatch
	case declared == runquery.Time && typ == runquery.Keyword:
		t, err := runquery.ParseTime(vals[0].Keyword)
		if err != nil {
			return nil, fmt.Errorf("%w %q: it is a time attribute; %q is not an RFC 3339 time", ErrInvalidSearchAttribute, name, vals[0].Keyword)
		}
		return []SearchAttributeValue{{Type: runquery.Time, Time: t}}, nil
	case declared == runquery.KeywordList && typ == runquery.Keyword:
		return []SearchAttributeValue{{Type: runquery.KeywordList, Keyword: vals[0].Keyword}}, nil
	}
	return nil, mismatch
}

// SearchAttributesOf rebuilds attributes from stored values (of one run,
// by name, members in order) as the Go values a read returns.
func SearchAttributesOf(byName map[string][]SearchAttributeValue) SearchAttributes {
	a := SearchAttributes{}
	for name, vals := range byName {
		if len(vals) == 0 {
			continue
		}
		switch vals[0].Type {
		case runquery.KeywordList:
			ss := make([]string, len(vals))
			for i, v := range vals {
				ss[i] = v.Keyword
			}
			a[name] = ss
		case runquery.Keyword:
			a[name] = vals[0].Keyword
		case runquery.Int:
			a[name] = vals[0].Int
		case runquery.Float:
			a[name] = vals[0].Float
		case runquery.Bool:
			a[name] = vals[0].Bool
		case runquery.Time:
			a[name] = vals[0].Time
		}
	}
	return a
}

// SearchAttributeStore is implemented by backends that store search
// attributes (both of this module's; go migration 13).
type SearchAttributeStore interface {
	// UpsertSearchAttributes sets the run's attributes named in
	// p.Attributes (a nil value removes one) and leaves the others, in one
	// transaction; ow.SetSearchAttributes calls it from a memoised step.
	// It fails with [ErrRunNotFound] for a missing run, and with
	// [ErrInvalidSearchAttribute] (naming the attribute) for a bad name,
	// a value of another type than the namespace's for that name, or a
	// run that would hold more than the limits allow — nothing is written
	// then.
	UpsertSearchAttributes(ctx context.Context, p UpsertSearchAttributesParams) error
	// SearchAttributesOf returns the attributes of the runs given, by run
	// id; a run without attributes (or missing) has no entry.
	SearchAttributesOf(ctx context.Context, runIDs []string) (map[string]SearchAttributes, error)
	// SearchAttributeTypes returns the namespace's declared attribute
	// names and their types.
	SearchAttributeTypes(ctx context.Context) (map[string]runquery.Type, error)
}

// UpsertSearchAttributesParams are the inputs of
// [SearchAttributeStore.UpsertSearchAttributes].
type UpsertSearchAttributesParams struct {
	// WorkflowRunID is the run.
	WorkflowRunID string
	// Attributes are the values to set; a nil value removes the name.
	Attributes SearchAttributes
}
