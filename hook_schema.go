package openworkflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/openworkflow-go/openworkflow/backend"
)

// This file is a hook's payload schema: a JSON Schema recorded in the
// hook's metadata, under the key "payloadSchema", that every payload is
// checked against before it is stored. A payload the workflow cannot
// decode is refused where it is sent (Client.ResumeHook, POST
// /v1/hooks/{token}, `ow hooks resume`), so the run keeps waiting instead
// of failing on it and replaying the bad payload on every retry.

// HookPayloadSchemaKey is the member of a hook's metadata (a JSON object)
// that holds its payload schema; see [WithPayloadSchema].
const HookPayloadSchemaKey = "payloadSchema"

// WithPayloadSchema makes the hook refuse payloads that schema (a JSON
// Schema, drafts 4 to 2020-12; 2020-12 when it names none) does not
// accept: [Client.ResumeHook] and POST /v1/hooks/{token} check each
// payload against it and store nothing on a mismatch (the error is a
// *[HookPayloadError]). The schema is recorded in the hook's metadata as
// its "payloadSchema" member, beside the members of [WithMetadata]'s
// value, which must then be a JSON object. A schema that does not compile
// fails CreateHook without retry. Formats are annotations, and $refs to
// other documents are not loaded.
func WithPayloadSchema(schema json.RawMessage) HookOption {
	return func(o *hookOptions) { o.schema = schema }
}

// HookPayloadError is the error of a payload a hook's schema refuses
// ([WithPayloadSchema]). It wraps backend.ErrInvalidArgument; nothing was
// stored and the hook waits as it did.
type HookPayloadError struct {
	// HookID and StepName name the hook.
	HookID, StepName string
	// Problems lists what is wrong, each with its place in the payload
	// ("approved: missing property", "payload.count: got string, want
	// integer").
	Problems []string
}

// Error names the hook and every problem.
func (e *HookPayloadError) Error() string {
	return fmt.Sprintf("the payload does not match the schema of hook %q (%s): %s; fix the payload and send it again (nothing was delivered)",
		e.StepName, e.HookID, strings.Join(e.Problems, "; "))
}

// Unwrap returns backend.ErrInvalidArgument.
func (e *HookPayloadError) Unwrap() error { return backend.ErrInvalidArgument }

// hookMetadata merges the hook's metadata and payload schema into the JSON
// recorded with the hook.
func hookMetadata(o hookOptions) (json.RawMessage, error) {
	var meta json.RawMessage
	if o.metadata != nil {
		var err error
		if meta, err = encodeValue(o.metadata); err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
	}
	if o.schema == nil {
		// Metadata that names a schema itself is checked the same way.
		if _, _, err := payloadSchemaOf(meta); err != nil {
			return nil, err
		}
		return meta, nil
	}
	if _, err := compilePayloadSchema(o.schema); err != nil {
		return nil, fmt.Errorf("payload schema: %w", err)
	}
	fields := map[string]json.RawMessage{}
	if len(meta) > 0 && string(meta) != "null" {
		if err := json.Unmarshal(meta, &fields); err != nil {
			return nil, fmt.Errorf("metadata: with a payload schema the metadata must be a JSON object, to hold it as %q", HookPayloadSchemaKey)
		}
	}
	fields[HookPayloadSchemaKey] = o.schema
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	return out, nil
}

// payloadSchemaOf returns the payload schema a hook's metadata holds, if
// any: ok is false for metadata that is not an object or has no
// "payloadSchema" member (or a null one).
func payloadSchemaOf(meta json.RawMessage) (s *jsonschema.Schema, ok bool, err error) {
	if len(meta) == 0 || meta[0] != '{' {
		return nil, false, nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(meta, &fields) != nil {
		return nil, false, nil
	}
	raw, ok := fields[HookPayloadSchemaKey]
	if !ok || string(raw) == "null" {
		return nil, false, nil
	}
	s, err = compilePayloadSchema(raw)
	if err != nil {
		return nil, false, fmt.Errorf("payload schema: %w", err)
	}
	return s, true, nil
}

// payloadSchemaURL names a payload schema inside its compiler.
const payloadSchemaURL = "openworkflow:///hook-payload-schema.json"

// noSchemaLoader refuses every external $ref: a payload schema is one
// document, and checking a payload reads nothing from elsewhere.
type noSchemaLoader struct{}

func (noSchemaLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %s is not loaded: a hook's payload schema must be self-contained", url)
}

func compilePayloadSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if _, isObject := doc.(map[string]any); !isObject {
		if _, isBool := doc.(bool); !isBool {
			return nil, errors.New("a JSON Schema is an object (or true or false)")
		}
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noSchemaLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(payloadSchemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(payloadSchemaURL)
}

// CheckHookPayload checks data (JSON) against the payload schema of hook h
// ([WithPayloadSchema]), as [Client.ResumeHook] does before it delivers:
// nil when h has no schema or the schema accepts data, else a
// *[HookPayloadError] listing the problems.
func CheckHookPayload(h *backend.Hook, data json.RawMessage) error {
	s, ok, err := payloadSchemaOf(h.Metadata)
	if err != nil {
		return &HookPayloadError{HookID: h.ID, StepName: h.StepName, Problems: []string{"the hook's " + err.Error()}}
	}
	if !ok {
		return nil
	}
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return &HookPayloadError{HookID: h.ID, StepName: h.StepName, Problems: []string{"not JSON: " + err.Error()}}
	}
	err = s.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &HookPayloadError{HookID: h.ID, StepName: h.StepName, Problems: []string{err.Error()}}
	}
	var problems []string
	for _, u := range ve.BasicOutput().Errors {
		if u.Error == nil {
			continue
		}
		msg := u.Error.String()
		if strings.HasPrefix(msg, "validation failed") {
			continue // a summary unit: its causes follow
		}
		where := pointerPath(u.InstanceLocation)
		if where == "" {
			where = "the payload"
		}
		problems = append(problems, where+": "+msg)
	}
	if len(problems) == 0 {
		problems = []string{ve.Error()}
	}
	return &HookPayloadError{HookID: h.ID, StepName: h.StepName, Problems: problems}
}

// pointerPath turns a JSON pointer ("/items/0/name") into a path as
// messages write it ("items[0].name").
func pointerPath(ptr string) string {
	if ptr == "" || ptr == "/" {
		return ""
	}
	var b strings.Builder
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if tok != "" && strings.Trim(tok, "0123456789") == "" {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}
