package goindex

import (
	"bytes"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend/sqlite"
)

// testPackages are small standard-library packages of a few files.
var testPackages = []string{"container/list", "container/ring", "unicode/utf8", "bufio", "errors"}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of steps.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// independentTotals counts the same files another way: every non-test .go
// file found by filepath.Glob, lines split on "\n", declarations walked
// with ast.Inspect at depth one.
func independentTotals(t *testing.T, root string, pkgs []string) Totals {
	t.Helper()
	var tot Totals
	for _, p := range pkgs {
		paths, err := filepath.Glob(filepath.Join(root, p, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range paths {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			tot.Files++
			tot.Lines += len(strings.Split(strings.TrimSuffix(string(src), "\n"), "\n"))
			for _, d := range f.Decls {
				ast.Inspect(d, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.FuncDecl:
						tot.Funcs++
						return false
					case *ast.TypeSpec:
						tot.Types++
						return false
					case *ast.ValueSpec:
						tot.Values += len(n.Names)
						return false
					case *ast.GenDecl:
						return true
					}
					return false
				})
			}
		}
	}
	return tot
}

func TestDemoIndexesPackagesAndMatchesAnIndependentCount(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root, err := SourceRoot()
	if err != nil {
		t.Skip(err)
	}
	b, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ow.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	var out syncBuffer
	res, err := Demo(ctx, b, DemoOptions{Root: root, Packages: testPackages, Pause: 10 * time.Millisecond, Out: &out})
	if err != nil {
		t.Fatalf("Demo: %v\noutput:\n%s", err, out.String())
	}
	want := independentTotals(t, root, testPackages)
	if res.Report.Totals != want {
		t.Errorf("report totals %+v, independent count %+v", res.Report.Totals, want)
	}
	if len(res.Report.Packages) != len(testPackages) {
		t.Errorf("report has %d packages, want %d", len(res.Report.Packages), len(testPackages))
	}
	for i, p := range res.Report.Packages {
		if p.Package != testPackages[i] {
			t.Errorf("package %d is %q, want %q (input order)", i, p.Package, testPackages[i])
		}
	}
	if res.Resumed {
		t.Error("a first run reports Resumed")
	}

	t.Run("every progress line is printed once, despite the replays", func(t *testing.T) {
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		seen := map[string]bool{}
		indexed := 0
		for _, l := range lines {
			if seen[l] {
				t.Errorf("line printed twice: %q", l)
			}
			seen[l] = true
			if strings.Contains(l, "indexed ") {
				indexed++
			}
		}
		if indexed != want.Files {
			t.Errorf("%d 'indexed' lines, want one per file (%d)", indexed, want.Files)
		}
	})

	t.Run("running it again returns the completed run's report without re-indexing", func(t *testing.T) {
		var again syncBuffer
		res2, err := Demo(ctx, b, DemoOptions{Root: root, Packages: testPackages, Pause: 10 * time.Millisecond, Out: &again})
		if err != nil {
			t.Fatal(err)
		}
		if res2.RunID != res.RunID || !res2.Resumed || res2.Report.Totals != want {
			t.Errorf("second call: run %s resumed=%v totals %+v; want run %s, resumed, same totals", res2.RunID, res2.Resumed, res2.Report.Totals, res.RunID)
		}
		if strings.Contains(again.String(), "indexed ") {
			t.Errorf("second call indexed files again:\n%s", again.String())
		}
	})
}

func TestDemoRejectsAnUnknownPackage(t *testing.T) {
	t.Parallel()
	root, err := SourceRoot()
	if err != nil {
		t.Skip(err)
	}
	b, err := sqlite.Open(context.Background(), ":memory:", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = Demo(context.Background(), b, DemoOptions{Root: root, Packages: []string{"no/such/pkg"}})
	if err == nil || !strings.Contains(err.Error(), `"no/such/pkg"`) {
		t.Fatalf("err = %v; want one naming the package", err)
	}
}

func TestBuildReportRanksTheLargestFiles(t *testing.T) {
	t.Parallel()
	files := func(pkg string, lines ...int) PackageStats {
		ps := PackageStats{Package: pkg}
		for i, n := range lines {
			f := FileStats{Package: pkg, File: string(rune('a'+i)) + ".go", Lines: n}
			ps.Files = append(ps.Files, f)
			ps.Totals.Add(f)
		}
		return ps
	}
	r := BuildReport([]PackageStats{files("p", 10, 50, 30), files("q", 50, 5, 40, 1)})
	var got []string
	for _, f := range r.TopFiles {
		got = append(got, f.Package+"/"+f.File)
	}
	if want := "p/b.go q/a.go q/c.go p/c.go p/a.go"; strings.Join(got, " ") != want {
		t.Errorf("top files %v, want %s", got, want)
	}
	if r.Totals.Files != 7 || r.Totals.Lines != 186 {
		t.Errorf("totals %+v", r.Totals)
	}
}
