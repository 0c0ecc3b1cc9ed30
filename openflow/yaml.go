package openflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// yaml limits: aliases can make a small document expand enormously (a
// "billion laughs"), so their expansions are counted.
const (
	maxYAMLDepth   = 200
	maxYAMLOutput  = maxDocumentSize
	maxYAMLAliases = 10000
)

// yamlToJSON converts a YAML document to JSON, keeping mapping order.
// Rawscript contents "!inline <file>" are replaced by the file's contents
// (relative to inlineDir) when inlineDir is set.
func yamlToJSON(data []byte, inlineDir string) (json.RawMessage, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not valid JSON or YAML: %v", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, errors.New("empty document: expected an OpenFlow object {summary, value: {modules: [...]}, schema}")
	}
	c := &yamlConverter{inlineDir: inlineDir}
	if err := c.node(doc.Content[0], 0, ""); err != nil {
		return nil, err
	}
	return c.buf.Bytes(), nil
}

type yamlConverter struct {
	buf       bytes.Buffer
	inlineDir string
	aliases   int
}

func (c *yamlConverter) node(n *yaml.Node, depth int, key string) error {
	if depth > maxYAMLDepth {
		return fmt.Errorf("YAML nested more than %d levels deep", maxYAMLDepth)
	}
	if c.buf.Len() > maxYAMLOutput {
		return fmt.Errorf("YAML document expands to more than %d bytes of JSON", maxYAMLOutput)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return fmt.Errorf("line %d: unresolved alias", n.Line)
		}
		if c.aliases++; c.aliases > maxYAMLAliases {
			return fmt.Errorf("line %d: more than %d alias expansions", n.Line, maxYAMLAliases)
		}
		return c.node(n.Alias, depth+1, key)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			c.buf.WriteString("null")
			return nil
		}
		return c.node(n.Content[0], depth+1, key)
	case yaml.SequenceNode:
		c.buf.WriteByte('[')
		for i, it := range n.Content {
			if i > 0 {
				c.buf.WriteByte(',')
			}
			if err := c.node(it, depth+1, ""); err != nil {
				return err
			}
		}
		c.buf.WriteByte(']')
		return nil
	case yaml.MappingNode:
		return c.mapping(n, depth)
	case yaml.ScalarNode:
		return c.scalar(n, key)
	}
	return fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

func (c *yamlConverter) mapping(n *yaml.Node, depth int) error {
	c.buf.WriteByte('{')
	first := true
	var pairs func(m *yaml.Node, d int) error
	pairs = func(m *yaml.Node, d int) error {
		if d > maxYAMLDepth {
			return fmt.Errorf("YAML nested more than %d levels deep", maxYAMLDepth)
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
				if err := c.merge(v, d, pairs); err != nil {
					return err
				}
				continue
			}
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: mapping keys must be strings", k.Line)
			}
			if !first {
				c.buf.WriteByte(',')
			}
			first = false
			kb, _ := json.Marshal(k.Value)
			c.buf.Write(kb)
			c.buf.WriteByte(':')
			if err := c.node(v, d+1, k.Value); err != nil {
				return err
			}
		}
		return nil
	}
	if err := pairs(n, depth); err != nil {
		return err
	}
	c.buf.WriteByte('}')
	return nil
}

// merge writes the pairs of a YAML merge key's value (a mapping, an alias
// of one, or a sequence of them).
func (c *yamlConverter) merge(v *yaml.Node, d int, pairs func(*yaml.Node, int) error) error {
	for v.Kind == yaml.AliasNode && v.Alias != nil {
		if c.aliases++; c.aliases > maxYAMLAliases {
			return fmt.Errorf("line %d: more than %d alias expansions", v.Line, maxYAMLAliases)
		}
		v = v.Alias
	}
	switch v.Kind {
	case yaml.MappingNode:
		return pairs(v, d+1)
	case yaml.SequenceNode:
		for _, it := range v.Content {
			if err := c.merge(it, d+1, pairs); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("line %d: a merge key (<<) needs a mapping", v.Line)
}

func (c *yamlConverter) scalar(n *yaml.Node, key string) error {
	var out any
	switch n.Tag {
	case "!!null":
		c.buf.WriteString("null")
		return nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return fmt.Errorf("line %d: %v", n.Line, err)
		}
		out = b
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			var f float64
			if err := n.Decode(&f); err != nil {
				return fmt.Errorf("line %d: %v", n.Line, err)
			}
			out = f
		} else {
			out = i
		}
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return fmt.Errorf("line %d: %v", n.Line, err)
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("line %d: %s has no JSON representation", n.Line, n.Value)
		}
		out = f
	default: // strings, timestamps, binary and custom tags keep their text
		s := n.Value
		if key == "content" && c.inlineDir != "" && strings.HasPrefix(s, "!inline ") {
			text, err := c.inline(strings.TrimSpace(strings.TrimPrefix(s, "!inline ")))
			if err != nil {
				return fmt.Errorf("line %d: %v", n.Line, err)
			}
			s = text
		}
		out = s
	}
	b, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("line %d: %v", n.Line, err)
	}
	c.buf.Write(b)
	return nil
}

func (c *yamlConverter) inline(name string) (string, error) {
	p := filepath.Join(c.inlineDir, filepath.FromSlash(name))
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("!inline %s: %v", name, err)
	}
	return string(b), nil
}
