package openflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compiledSchema is a flow's input schema compiled by
// github.com/santhosh-tekuri/jsonschema (drafts 4 to 2020-12; a schema
// without $schema is read as 2020-12). Formats are annotations, as the
// draft says by default: Windmill uses formats of its own ("resource-s3",
// "email", "") that must not reject input. $refs to other documents are
// not loaded.
type compiledSchema struct {
	s *jsonschema.Schema
}

// noLoader refuses every external $ref: a flow's schema is one document.
type noLoader struct{}

// Load refuses url.
func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %s is not loaded: a flow's schema must be self-contained", url)
}

const schemaURL = "openflow:///schema.json"

func compileSchema(raw json.RawMessage) (*compiledSchema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, err
	}
	return &compiledSchema{s: s}, nil
}

// ValidateArgs checks args (a JSON object; empty means {}) against the
// flow's schema and returns a *[ValidationError] (What "flow input")
// listing each violation with its path in args, e.g. "x: got string, want
// number". A flow without a schema accepts any JSON object. Defaults in
// the schema are not filled in, as in Windmill's engine (its UI fills
// them).
func (f *Flow) ValidateArgs(args json.RawMessage) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	if jsonKind(args) != "an object" || !json.Valid(args) {
		return &ValidationError{What: "flow input", Problems: []Problem{{Message: fmt.Sprintf("expected a JSON object of arguments, found %s", jsonKind(args))}}}
	}
	if f.schema == nil {
		return nil
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return &ValidationError{What: "flow input", Problems: []Problem{{Message: err.Error()}}}
	}
	err = f.schema.s.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &ValidationError{What: "flow input", Problems: []Problem{{Message: err.Error()}}}
	}
	var problems []Problem
	for _, u := range ve.BasicOutput().Errors {
		if u.Error == nil {
			continue
		}
		msg := u.Error.String()
		if strings.HasPrefix(msg, "validation failed") {
			continue // a summary unit: its causes follow
		}
		problems = append(problems, Problem{Path: pointerPath(u.InstanceLocation), Message: msg})
	}
	if len(problems) == 0 {
		problems = []Problem{{Message: ve.Error()}}
	}
	return &ValidationError{What: "flow input", Problems: problems}
}

// pointerPath turns a JSON pointer ("/items/0/name") into the path style
// of messages ("items[0].name").
func pointerPath(ptr string) string {
	if ptr == "" || ptr == "/" {
		return ""
	}
	var b strings.Builder
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if _, err := strconv.Atoi(tok); err == nil {
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
