package dag

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Parse reads a DAG definition from YAML or JSON (JSON is read as YAML).
// Steps are a list, in declaration order:
//
//	name: order-fulfillment
//	steps:
//	  - name: validate-stock
//	    handler: validateStock
//	  - name: charge-card
//	    handler: chargeCard
//	    retries: 2
//	    compensate: refundCard
//	    dependsOn: [validate-stock]
//
// or, as pgshift's define({steps, dag}), a mapping from step name to its
// configuration (declaration order is the file's order) with the
// dependencies in a separate dag mapping:
//
//	name: order-fulfillment
//	steps:
//	  validate-stock: {handler: validateStock}
//	  charge-card: {handler: chargeCard, retries: 2, compensate: refundCard}
//	dag:
//	  charge-card: [validate-stock]
//
// A step absent from dag has no dependencies. Handlers are named, and
// registered in Go on the [Engine]. Unknown fields, a step's dependencies
// given twice, and malformed values are errors naming the line; the
// definition is then validated as [Definition.Validate] does without the
// handler check (which [Engine.Define] adds). Errors wrap
// [ErrInvalidDefinition] or the sentinel of the problem.
func Parse(data []byte) (Definition, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Definition{}, fmt.Errorf("%w: %v", ErrInvalidDefinition, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return Definition{}, fmt.Errorf("%w: the document is not a mapping with name and steps", ErrInvalidDefinition)
	}
	var d Definition
	var steps, deps *yaml.Node
	err := eachField(doc.Content[0], "the definition", []string{"name", "steps", "dag"}, func(key string, v *yaml.Node) error {
		switch key {
		case "name":
			return decodeScalar(v, "name", &d.Name)
		case "steps":
			steps = v
		case "dag":
			deps = v
		}
		return nil
	})
	if err != nil {
		return Definition{}, err
	}
	if steps == nil {
		return Definition{}, fmt.Errorf("%w: the definition has no steps", ErrInvalidDefinition)
	}
	if d.Steps, err = parseSteps(steps); err != nil {
		return Definition{}, err
	}
	if deps != nil {
		if err := applyDAG(d.Steps, deps); err != nil {
			return Definition{}, err
		}
	}
	if err := d.Validate(nil); err != nil {
		return Definition{}, err
	}
	return d, nil
}

var stepFields = []string{"name", "handler", "retries", "compensate", "dependsOn"}

// parseSteps reads the steps, a list or a mapping by name.
func parseSteps(n *yaml.Node) ([]Step, error) {
	var out []Step
	switch n.Kind {
	case yaml.SequenceNode:
		for i, item := range n.Content {
			s, err := parseStep(item, fmt.Sprintf("step %d", i+1), stepFields)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			var name string
			if err := decodeScalar(n.Content[i], "step name", &name); err != nil {
				return nil, err
			}
			s, err := parseStep(n.Content[i+1], fmt.Sprintf("step %q", name), stepFields[1:])
			if err != nil {
				return nil, err
			}
			s.Name = name
			out = append(out, s)
		}
	default:
		return nil, lineError(n, "steps must be a list of steps or a mapping from step name to step")
	}
	return out, nil
}

// parseStep reads one step's mapping, allowing the fields given.
func parseStep(n *yaml.Node, what string, fields []string) (Step, error) {
	var s Step
	err := eachField(n, what, fields, func(key string, v *yaml.Node) error {
		switch key {
		case "name":
			return decodeScalar(v, what+": name", &s.Name)
		case "handler":
			return decodeScalar(v, what+": handler", &s.Handler)
		case "compensate":
			return decodeScalar(v, what+": compensate", &s.Compensate)
		case "retries":
			var r int
			if err := decodeScalar(v, what+": retries", &r); err != nil {
				return err
			}
			s.Retries = &r
		case "dependsOn":
			return decodeList(v, what+": dependsOn", &s.DependsOn)
		}
		return nil
	})
	return s, err
}

// applyDAG sets the dependencies given in pgshift's dag mapping.
func applyDAG(steps []Step, n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return lineError(n, "dag must be a mapping from step name to the list of its dependencies")
	}
	idx := map[string]int{}
	for i, s := range steps {
		idx[s.Name] = i
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		var name string
		if err := decodeScalar(n.Content[i], "dag: step name", &name); err != nil {
			return err
		}
		j, ok := idx[name]
		if !ok {
			return fmt.Errorf("%w: %s", ErrUnknownDependency, lineError(n.Content[i], fmt.Sprintf("dag names %q, which is not a step", name)).Error())
		}
		if steps[j].DependsOn != nil {
			return lineError(n.Content[i], fmt.Sprintf("the dependencies of step %q are given twice (dependsOn and dag, or twice in dag)", name))
		}
		var deps []string
		if err := decodeList(n.Content[i+1], fmt.Sprintf("dag: %q", name), &deps); err != nil {
			return err
		}
		steps[j].DependsOn = append([]string{}, deps...)
	}
	return nil
}

// eachField calls f for each key of the mapping n, refusing keys not in
// allowed and keys given twice.
func eachField(n *yaml.Node, what string, allowed []string, f func(key string, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return lineError(n, what+" must be a mapping")
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode {
			return lineError(k, what+": a key is not a string")
		}
		known := false
		for _, a := range allowed {
			known = known || a == k.Value
		}
		if !known {
			return lineError(k, fmt.Sprintf("%s: unknown field %q (want %s)", what, k.Value, strings.Join(allowed, ", ")))
		}
		if seen[k.Value] {
			return lineError(k, fmt.Sprintf("%s: field %q given twice", what, k.Value))
		}
		seen[k.Value] = true
		if err := f(k.Value, n.Content[i+1]); err != nil {
			return err
		}
	}
	return nil
}

func decodeScalar(n *yaml.Node, what string, v any) error {
	if n.Kind != yaml.ScalarNode {
		return lineError(n, what+" must be a single value")
	}
	if err := n.Decode(v); err != nil {
		return lineError(n, fmt.Sprintf("%s: %q is not a %s", what, n.Value, kindName(v)))
	}
	return nil
}

func decodeList(n *yaml.Node, what string, v *[]string) error {
	if n.Kind != yaml.SequenceNode {
		return lineError(n, what+" must be a list of step names")
	}
	for _, item := range n.Content {
		var s string
		if err := decodeScalar(item, what, &s); err != nil {
			return err
		}
		*v = append(*v, s)
	}
	if *v == nil {
		*v = []string{}
	}
	return nil
}

func kindName(v any) string {
	if _, ok := v.(*int); ok {
		return "whole number"
	}
	return "string"
}

// lineError is a definition error at n's line.
func lineError(n *yaml.Node, msg string) error {
	return fmt.Errorf("%w: line %d: %s", ErrInvalidDefinition, n.Line, msg)
}
