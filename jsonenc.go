package openworkflow

import (
	"bytes"
	"encoding/json"
)

// marshalValue encodes v as json.Marshal does, except that <, > and & are
// kept as they are rather than escaped as \u003c, \u003e and \u0026: a
// stored value is JSON, not HTML, and reads back (in the API, the
// dashboard, the ow command, a TypeScript reader) as it was written.
func marshalValue(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
