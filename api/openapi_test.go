package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/openworkflow-go/openworkflow/api"
)

// openAPIDoc is the part of the document the tests read.
type openAPIDoc struct {
	OpenAPI string                                 `json:"openapi"`
	Paths   map[string]map[string]openAPIOperation `json:"paths"`
}

type openAPIOperation struct {
	OperationID string                     `json:"operationId"`
	Security    []map[string][]string      `json:"security"`
	Responses   map[string]json.RawMessage `json:"responses"`
}

func loadOpenAPI(t testing.TB) openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	if err := json.Unmarshal(api.OpenAPI(), &doc); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	return doc
}

// operation finds the documented operation of a route; the webhook
// route, of any method, documents each method it takes.
func (d openAPIDoc) operation(method, pattern string) (openAPIOperation, bool) {
	item, ok := d.Paths[pattern]
	if !ok {
		return openAPIOperation{}, false
	}
	op, ok := item[strings.ToLower(method)]
	return op, ok
}

func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	doc := loadOpenAPI(t)
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	h := api.New(nil, api.Options{})
	documented := map[string]bool{}
	for _, rt := range h.Routes() {
		methods := []string{rt.Method}
		if rt.Method == "*" {
			methods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}
		}
		for _, m := range methods {
			op, ok := doc.operation(m, rt.Pattern)
			if !ok {
				t.Errorf("route %s %s is not in openapi.json", m, rt.Pattern)
				continue
			}
			if !strings.HasPrefix(op.OperationID, rt.OperationID) {
				t.Errorf("%s %s: operationId %q, the route table says %q", m, rt.Pattern, op.OperationID, rt.OperationID)
			}
			if len(op.Security) == 0 || len(op.Security[0]["bearer"]) != 1 || op.Security[0]["bearer"][0] != rt.Scope.String() {
				t.Errorf("%s %s: security %v, the route table says scope %s", m, rt.Pattern, op.Security, rt.Scope)
			}
			documented[strings.ToLower(m)+" "+rt.Pattern] = true
		}
	}
	// And nothing documented that the server does not serve.
	for path, item := range doc.Paths {
		for m := range item {
			if !documented[m+" "+path] {
				t.Errorf("openapi.json documents %s %s, which no route serves", strings.ToUpper(m), path)
			}
		}
	}
	// Every $ref resolves.
	var raw any
	_ = json.Unmarshal(api.OpenAPI(), &raw)
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				if _, err := pointer(raw, ref); err != nil {
					t.Errorf("$ref %s: %v", ref, err)
				}
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(raw)
}

// pointer resolves a local JSON pointer ("#/a/b").
func pointer(doc any, ref string) (any, error) {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, fmt.Errorf("not a local reference")
	}
	cur := doc
	for _, part := range strings.Split(p, "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s is not an object", part)
		}
		if cur, ok = m[part]; !ok {
			return nil, fmt.Errorf("no member %s", part)
		}
	}
	return cur, nil
}

// undocumented returns the statuses the tests saw a route answer that
// openapi.json does not list for it, and the JSON answers that do not
// match the schema it documents.
func (sr *statusRecorder) undocumented() []string {
	var doc openAPIDoc
	if err := json.Unmarshal(api.OpenAPI(), &doc); err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	sr.mu.Lock()
	defer sr.mu.Unlock()
	var problems []string
	keys := make([]string, 0, len(sr.seen))
	for k := range sr.seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		method, pattern, _ := strings.Cut(key, " ")
		op, ok := doc.operation(method, pattern)
		if !ok {
			if method == "HEAD" || method == "OPTIONS" {
				continue
			}
			op, ok = anyOperation(doc, pattern)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s is not documented", key))
				continue
			}
		}
		for status := range sr.seen[key] {
			if _, ok := op.Responses[strconv.Itoa(status)]; !ok {
				problems = append(problems, fmt.Sprintf("%s answered %d, which is not documented", key, status))
			}
		}
	}
	problems = append(problems, sr.invalidBodies(doc)...)
	return problems
}

// anyOperation returns an operation of the path: a wrong method answers
// 405, documented on every operation of the path.
func anyOperation(doc openAPIDoc, pattern string) (openAPIOperation, bool) {
	item := doc.Paths[pattern]
	ms := make([]string, 0, len(item))
	for m := range item {
		ms = append(ms, m)
	}
	slices.Sort(ms)
	if len(ms) == 0 {
		return openAPIOperation{}, false
	}
	return item[ms[0]], true
}

// invalidBodies validates each recorded JSON answer against the schema
// its operation documents for its status.
func (sr *statusRecorder) invalidBodies(doc openAPIDoc) []string {
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(api.OpenAPI()))
	if err != nil {
		return []string{err.Error()}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("openapi.json", raw); err != nil {
		return []string{err.Error()}
	}
	compiled := map[string]*jsonschema.Schema{}
	var problems []string
	for _, s := range sr.samples {
		op, ok := doc.operation(s.method, s.pattern)
		if !ok {
			op, ok = anyOperation(doc, s.pattern)
		}
		resp, ok := op.Responses[strconv.Itoa(s.status)]
		if !ok {
			continue // reported above
		}
		loc, err := schemaLocation(doc, s, resp)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if loc == "" {
			continue
		}
		sch, ok := compiled[loc]
		if !ok {
			if sch, err = c.Compile(loc); err != nil {
				problems = append(problems, fmt.Sprintf("compile %s: %v", loc, err))
				continue
			}
			compiled[loc] = sch
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(s.body))
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s %s answered %d with a body that is not JSON: %s", s.method, s.pattern, s.status, s.body))
			continue
		}
		if err := sch.Validate(inst); err != nil {
			problems = append(problems, fmt.Sprintf("%s %s answered %d with a body that does not match %s: %v\n%s", s.method, s.pattern, s.status, loc, err, s.body))
		}
	}
	return problems
}

// schemaLocation returns the URL of the JSON schema a response is
// documented with ("" if it documents no JSON body).
func schemaLocation(doc openAPIDoc, s sample, resp json.RawMessage) (string, error) {
	var r struct {
		Ref     string `json:"$ref"`
		Content map[string]struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"content"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		return "", err
	}
	if r.Ref != "" {
		// A shared error response: its schema is Error.
		return "openapi.json#/components/schemas/Error", nil
	}
	if _, ok := r.Content["application/json"]; !ok {
		return "", nil
	}
	method := strings.ToLower(s.method)
	if _, ok := doc.Paths[s.pattern][method]; !ok {
		return "", nil
	}
	esc := strings.NewReplacer("~", "~0", "/", "~1").Replace(s.pattern)
	return fmt.Sprintf("openapi.json#/paths/%s/%s/responses/%d/content/application~1json/schema", esc, method, s.status), nil
}
