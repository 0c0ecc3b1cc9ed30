package runquery

import (
	"slices"
	"strings"
)

// Type is the type of a field or search attribute, as Temporal's
// IndexedValueType (Keyword, KeywordList, Int, Double, Bool, Datetime).
type Type string

// The types. Their Go values ([Type.GoType]) are string, string (one
// member of the list), int64, float64, bool and time.Time.
const (
	Keyword     Type = "keyword"
	KeywordList Type = "keyword_list"
	Int         Type = "int"
	Float       Type = "float"
	Bool        Type = "bool"
	Time        Type = "time"
)

// Types lists every type, in the order of the docs.
var Types = []Type{Keyword, KeywordList, Int, Float, Bool, Time}

// Valid reports whether t is one of [Types].
func (t Type) Valid() bool { return slices.Contains(Types, t) }

// GoType names the Go type of t's values in a [Predicate].
func (t Type) GoType() string {
	switch t {
	case Int:
		return "int64"
	case Float:
		return "float64"
	case Bool:
		return "bool"
	case Time:
		return "time.Time"
	}
	return "string"
}

func (t Type) literalName() string {
	switch t {
	case Int:
		return "an integer"
	case Float:
		return "a number"
	case Bool:
		return "true or false"
	case Time:
		return "a time string"
	}
	return "a string"
}

// ops is what each type allows, as Temporal's converter does
// (common/persistence/visibility/store/query/converter.go): a keyword
// list is tested for membership, so only =, !=, IN and NOT IN.
func (t Type) ops() []Op {
	null := []Op{IsNull, IsNotNull}
	switch t {
	case Keyword:
		return append([]Op{Eq, Ne, Lt, Le, Gt, Ge, In, NotIn, StartsWith, NotStartsWith}, null...)
	case KeywordList:
		return append([]Op{Eq, Ne, In, NotIn}, null...)
	case Bool:
		return append([]Op{Eq, Ne}, null...)
	default: // Int, Float, Time
		return append([]Op{Eq, Ne, Lt, Le, Gt, Ge, In, NotIn}, null...)
	}
}

func (t Type) allows(op Op) bool { return slices.Contains(t.ops(), op) }

func (t Type) opList() string {
	var s []string
	for _, op := range t.ops() {
		s = append(s, string(op))
	}
	return strings.Join(s, ", ")
}

// Field is what a predicate compares: a run field (Name, with Attr "") or
// a search attribute (Name "attrs", Attr its name).
type Field struct {
	// Name is the run field's name ([Fields]) or "attrs".
	Name string
	// Attr is the search attribute's name, for attrs.<name>.
	Attr string
	// Type is the run field's type; "" for a search attribute, whose
	// type its namespace declares.
	Type Type
	// Pos is where the field's name is.
	Pos Position

	check func(v any, pos Position) error
}

// String is the field as written: "status" or "attrs.customer".
func (f Field) String() string {
	if f.Attr != "" {
		return "attrs." + f.Attr
	}
	return f.Name
}

// FieldSpec describes one run field of the language.
type FieldSpec struct {
	// Type is the field's type.
	Type Type
	// Nullable is set when a run may have no value (IS NULL holds).
	Nullable bool
	// Doc says what the field is, for docs/queries.md and errors.
	Doc   string
	check func(v any, pos Position) error
}

// Fields are the run fields the language knows, by name. Each backend
// maps every name to its column (backend/postgres/runquery.go,
// backend/sqlite/runquery.go); a new field is added here and in both
// maps (their tests fail on a field one of them lacks).
var Fields = map[string]FieldSpec{
	"id":              {Type: Keyword, Doc: "the run id"},
	"status":          {Type: Keyword, Doc: "pending, running, completed, failed or canceled (legacy sleeping and succeeded read as running and completed)", check: checkStatus},
	"workflow":        {Type: Keyword, Doc: "the workflow name"},
	"version":         {Type: Keyword, Nullable: true, Doc: "the workflow version"},
	"created":         {Type: Time, Doc: "when the run was created"},
	"started":         {Type: Time, Nullable: true, Doc: "when the run was first claimed"},
	"finished":        {Type: Time, Nullable: true, Doc: "when the run ended"},
	"updated":         {Type: Time, Doc: "when the run last changed"},
	"idempotency_key": {Type: Keyword, Nullable: true, Doc: "the key the run was started with"},
	"parent":          {Type: Keyword, Nullable: true, Doc: "the id of the run whose step started this one (null for a top-level run)"},
	"schedule":        {Type: Keyword, Nullable: true, Doc: "the name of the schedule that started the run"},
	"concurrency_key": {Type: Keyword, Nullable: true, Doc: "the concurrency key the run was started with"},
	"priority":        {Type: Int, Doc: "the run's priority (higher is claimed first)"},
	"paused":          {Type: Bool, Doc: "whether the run is paused (Client.PauseRun; a finished run is not)"},
}

// Statuses are the values status compares with: the statuses a run shows.
var Statuses = []string{"pending", "running", "completed", "failed", "canceled"}

func checkStatus(v any, pos Position) error {
	s := v.(string)
	switch s {
	case "sleeping", "succeeded": // legacy names, read as running and completed
		return nil
	}
	if !slices.Contains(Statuses, s) {
		return Errorf(pos, "unknown status %q; a status is one of %s", s, strings.Join(Statuses, ", "))
	}
	return nil
}

// NormalizeStatus maps the legacy statuses to the current ones
// ("sleeping" → "running", "succeeded" → "completed"), as
// backend.RunStatus.Normalize.
func NormalizeStatus(s string) string {
	switch s {
	case "sleeping":
		return "running"
	case "succeeded":
		return "completed"
	}
	return s
}

// AttrPrefix is the prefix of search attribute fields: attrs.<name>.
const AttrPrefix = "attrs"

func lookupField(n *fieldNode) (Field, error) {
	pos := positionOf(n.Pos)
	if n.Name == AttrPrefix {
		if n.Sub == "" {
			return Field{}, Errorf(pos, "attrs needs the attribute's name: attrs.<name>")
		}
		return Field{Name: AttrPrefix, Attr: n.Sub, Pos: pos}, nil
	}
	spec, ok := Fields[n.Name]
	if !ok || n.Sub != "" {
		name := n.Name
		if n.Sub != "" {
			name += "." + n.Sub
		}
		return Field{}, Errorf(pos, "unknown field %q; the fields are %s and attrs.<name>", name, strings.Join(FieldNames(), ", "))
	}
	return Field{Name: n.Name, Type: spec.Type, Pos: pos, check: spec.check}, nil
}

// FieldNames returns the run fields' names, sorted.
func FieldNames() []string {
	names := make([]string, 0, len(Fields))
	for n := range Fields {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// String is the type's name.
func (t Type) String() string { return string(t) }
