package goindex

import (
	"bytes"
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
)

// FileStats are the counts of one Go source file, the output of one
// per-file step.
type FileStats struct {
	// Package is the package's import path ("encoding/json").
	Package string `json:"package"`
	// File is the file's base name ("decode.go").
	File string `json:"file"`
	// Lines counts newline-terminated lines (plus a final unterminated one).
	Lines int `json:"lines"`
	// Funcs counts top-level function and method declarations.
	Funcs int `json:"funcs"`
	// Types counts top-level type specs (each name of a grouped type
	// declaration counts once).
	Types int `json:"types"`
	// Values counts the names declared by top-level var and const specs.
	Values int `json:"values"`
}

// Totals sums [FileStats] over files.
type Totals struct {
	Files  int `json:"files"`
	Lines  int `json:"lines"`
	Funcs  int `json:"funcs"`
	Types  int `json:"types"`
	Values int `json:"values"`
}

// Add adds one file's counts.
func (t *Totals) Add(f FileStats) {
	t.Files++
	t.Lines += f.Lines
	t.Funcs += f.Funcs
	t.Types += f.Types
	t.Values += f.Values
}

// PackageStats is the output of the per-package child workflow.
type PackageStats struct {
	// Package is the import path.
	Package string `json:"package"`
	// Files are the package's files in name order.
	Files []FileStats `json:"files"`
	// Totals sums Files.
	Totals Totals `json:"totals"`
}

// Report is the output of the parent workflow: per-package totals, the
// grand total and the largest files.
type Report struct {
	// Packages are the child workflows' results, in input order.
	Packages []PackageStats `json:"packages"`
	// Totals sums every file of every package.
	Totals Totals `json:"totals"`
	// TopFiles are the TopN files with the most lines, largest first (ties
	// by package, then file name).
	TopFiles []FileStats `json:"topFiles"`
}

// TopN is the number of files listed in [Report.TopFiles].
const TopN = 5

// IndexFile parses the Go file path (in package pkg) and counts its lines
// and top-level declarations. Syntax errors are returned as errors.
func IndexFile(pkg, path string) (FileStats, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return FileStats{}, err
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.SkipObjectResolution)
	if err != nil {
		return FileStats{}, err
	}
	st := FileStats{Package: pkg, File: filepath.Base(path), Lines: countLines(src)}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			st.Funcs++
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					st.Types++
				case *ast.ValueSpec:
					st.Values += len(s.Names)
				}
			}
		}
	}
	return st, nil
}

func countLines(src []byte) int {
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

// ListGoFiles returns the base names of the non-test .go files of dir,
// sorted.
func ListGoFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.Type().IsRegular() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// BuildReport aggregates package results into a report.
func BuildReport(pkgs []PackageStats) Report {
	r := Report{Packages: pkgs, TopFiles: []FileStats{}}
	var all []FileStats
	for _, p := range pkgs {
		for _, f := range p.Files {
			r.Totals.Add(f)
			all = append(all, f)
		}
	}
	slices.SortFunc(all, func(a, b FileStats) int {
		return cmp.Or(cmp.Compare(b.Lines, a.Lines), cmp.Compare(a.Package, b.Package), cmp.Compare(a.File, b.File))
	})
	r.TopFiles = append(r.TopFiles, all[:min(TopN, len(all))]...)
	return r
}

// WriteText writes the report as aligned text tables.
func (r Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "package\t%5s\t%6s\t%5s\t%5s\t%11s\n", "files", "lines", "funcs", "types", "vars/consts")
	row := func(name string, t Totals) {
		fmt.Fprintf(tw, "%s\t%5d\t%6d\t%5d\t%5d\t%11d\n", name, t.Files, t.Lines, t.Funcs, t.Types, t.Values)
	}
	for _, p := range r.Packages {
		row(p.Package, p.Totals)
	}
	row("total", r.Totals)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nlargest files:\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range r.TopFiles {
		fmt.Fprintf(tw, "  %s/%s\t%6d lines\t%4d funcs\n", f.Package, f.File, f.Lines, f.Funcs)
	}
	return tw.Flush()
}
