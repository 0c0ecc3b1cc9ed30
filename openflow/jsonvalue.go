package openflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// member is one key of a JSON object, in document order.
type member struct {
	key string
	val json.RawMessage
}

// objectMembers returns the members of the JSON object raw in document
// order (a repeated key keeps its last value, at its first position).
func objectMembers(raw json.RawMessage) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not an object")
	}
	var ms []member
	seen := map[string]int{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if i, dup := seen[k]; dup {
			ms[i].val = v
			continue
		}
		seen[k] = len(ms)
		ms = append(ms, member{key: k, val: v})
	}
	return ms, nil
}

// encodeObject writes members as a compact JSON object, in order.
func encodeObject(ms []member) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		if len(m.val) == 0 {
			b.WriteString("null")
		} else {
			b.Write(m.val)
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// encodeArray writes items as a compact JSON array.
func encodeArray(items []json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		if len(it) == 0 {
			b.WriteString("null")
		} else {
			b.Write(it)
		}
	}
	b.WriteByte(']')
	return b.Bytes()
}

// compact returns raw without insignificant white space (raw itself when
// it is not valid JSON, or empty).
func compact(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// jsonKind names the JSON type of raw for messages: "an object", "an
// array", "a string", "a number", "a boolean", "null".
func jsonKind(raw json.RawMessage) string {
	s := bytes.TrimSpace(raw)
	if len(s) == 0 {
		return "nothing"
	}
	switch s[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	return len(s) == 0 || string(s) == "null"
}

// withKey returns the object obj with key set to val (replacing the key in
// place, or appended); a non-object obj becomes {key: val}.
func withKey(obj json.RawMessage, key string, val json.RawMessage) json.RawMessage {
	ms, err := objectMembers(obj)
	if err != nil {
		ms = nil
	}
	for i := range ms {
		if ms[i].key == key {
			ms[i].val = val
			return encodeObject(ms)
		}
	}
	return encodeObject(append(ms, member{key: key, val: val}))
}

// field returns obj.key, and whether obj is an object that has it.
func field(obj json.RawMessage, key string) (json.RawMessage, bool) {
	if len(obj) == 0 || bytes.TrimSpace(obj)[0] != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return nil, false
	}
	v, ok := m[key]
	return v, ok
}

// arrayItems returns the items of the JSON array raw.
func arrayItems(raw json.RawMessage) ([]json.RawMessage, bool) {
	if len(raw) == 0 || bytes.TrimSpace(raw)[0] != '[' {
		return nil, false
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, false
	}
	return items, true
}

// jsonString encodes s as a JSON string.
func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// mustJSON encodes v, which must be encodable (maps, strings, numbers).
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("openflow: encode %T: %v", v, err))
	}
	return b
}

// truthy reports whether raw is JSON true.
func truthy(raw json.RawMessage) bool {
	return strings.TrimSpace(string(raw)) == "true"
}
