package openflow

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"regexp"
	"strings"
)

// A go script is Windmill's: "package inner" with
// func main(x int, …) (interface{}, error). It is built and run with
// `go run` in a module of its own: main is renamed Main, and a generated
// main package decodes args.json into a struct of the parameters (field
// tags are the parameter names) and writes json.Marshal of the result. A
// returned error, like a panic, exits 1 (an ExecutionErr quoting the
// last log lines). Imports outside the standard library are resolved by
// the go command (-mod=mod), which needs the module proxy.

var goMainDecl = regexp.MustCompile(`(?m)^func\s+main\s*\(`)

func prepareGo(job scriptJob, bin string) (prepared, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "inner.go", job.content, parser.SkipObjectResolution)
	if err != nil {
		return prepared{}, fmt.Errorf("go script: %v", err)
	}
	if file.Name.Name != "inner" {
		return prepared{}, fmt.Errorf("go script: the package must be \"inner\", not %q", file.Name.Name)
	}
	fn := goMainFunc(file)
	if fn == nil {
		return prepared{}, fmt.Errorf("go script: no func main(…) (interface{}, error)")
	}
	if n := fn.Type.Results; n == nil || n.NumFields() != 2 {
		return prepared{}, fmt.Errorf("go script: main must return (interface{}, error)")
	}
	local := map[string]bool{}
	for _, d := range file.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
			for _, s := range g.Specs {
				local[s.(*ast.TypeSpec).Name.Name] = true
			}
		}
	}
	var fields, call strings.Builder
	i := 0
	for _, f := range fn.Type.Params.List {
		typ := goTypeText(fset, f.Type, local)
		for _, n := range f.Names {
			fmt.Fprintf(&fields, "\tP%d %s `json:%q`\n", i, typ, n.Name)
			fmt.Fprintf(&call, "a.P%d, ", i)
			i++
		}
	}
	mainGo := fmt.Sprintf(goWrapper, fields.String(), call.String())
	files := map[string]string{
		"go.mod":         "module wmgo\n\ngo 1.21\n",
		"inner/inner.go": goMainDecl.ReplaceAllString(job.content, "func Main("),
		"main.go":        mainGo,
	}
	if err := writeFiles(job.dir, files); err != nil {
		return prepared{}, err
	}
	return prepared{
		argv:    []string{bin, "run", "."},
		env:     []string{"GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local"},
		collect: collectResultFile("go"),
	}, nil
}

func goMainFunc(file *ast.File) *ast.FuncDecl {
	for _, d := range file.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "main" {
			return fn
		}
	}
	return nil
}

// goTypeText prints a parameter type, qualifying the script's own types
// with the inner package.
func goTypeText(fset *token.FileSet, t ast.Expr, local map[string]bool) string {
	ast.Inspect(t, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && local[id.Name] {
			id.Name = "inner." + id.Name
		}
		return true
	})
	var b bytes.Buffer
	_ = printer.Fprint(&b, fset, t)
	return b.String()
}

const goWrapper = `package main

import (
	"encoding/json"
	"fmt"
	"os"

	"wmgo/inner"
)

var _ = inner.Main

type args struct {
%s}

func main() {
	var a args
	b, err := os.ReadFile("args.json")
	if err == nil {
		err = json.Unmarshal(b, &a)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "decode args.json:", err)
		os.Exit(1)
	}
	res, err := inner.Main(%s)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, err := json.Marshal(res)
	if err != nil {
		fmt.Fprintln(os.Stderr, "encode result:", err)
		os.Exit(1)
	}
	if err := os.WriteFile("result.json", out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`
