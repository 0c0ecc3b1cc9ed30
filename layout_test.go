package openworkflow_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is this module's import path.
const module = "github.com/openworkflow-go/openworkflow"

// goPackage is what `go list -json` says of one package.
type goPackage struct {
	ImportPath string
	Imports    []string // direct imports (production code)
	Deps       []string // every package it depends on, transitively
}

// listPackages lists the module's packages.
func listPackages(t *testing.T) []goPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []goPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p goPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// moduleImports returns the imports of p inside this module, relative to
// it ("" is the root package).
func moduleImports(list []string) []string {
	var out []string
	for _, imp := range list {
		if imp == module {
			out = append(out, "")
		} else if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
			out = append(out, rel)
		}
	}
	return out
}

// TestPackagesImportOnlyWhatTheirLayerMay checks the import rules of
// docs/architecture.md, so that a change that would break them fails
// here rather than in review:
//   - the ground floor (package backend and the internal helpers) never
//     imports the SDK or a backend implementation;
//   - the SDK (the root package) imports no backend implementation, and
//     does not depend on Prometheus (package metrics does);
//   - dag/ and openflow/ import only the root package of this module:
//     they are clients of the SDK like any user's code;
//   - api/, dashboard/, metrics/ and server/ depend on no backend implementation
//     and import no internal package: they use the client side of the
//     seam (api/ and dashboard/ also import dag/, for a DAG run's status,
//     which dag/ derives from stored rows alone, and api/ imports
//     openflow/, for a flow run's view, derived the same way);
//   - nothing but examples imports examples/.
func TestPackagesImportOnlyWhatTheirLayerMay(t *testing.T) {
	implementations := []string{"backend/postgres", "backend/sqlite"}
	groundFloor := []string{"access", "backend", "eventexpr", "internal/clock", "internal/groupcommit", "internal/history", "internal/hub",
		"internal/id", "internal/sqlset", "internal/testhooks", "runquery", "telemetry"}
	checked := 0
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		imports, deps := moduleImports(p.Imports), moduleImports(p.Deps)
		top, _, _ := strings.Cut(rel, "/")
		switch {
		case slices.Contains(groundFloor, rel):
			for _, imp := range imports {
				if imp == "" || slices.Contains(implementations, imp) {
					t.Errorf("%s is on the ground floor but imports %q", rel, module+"/"+imp)
				}
			}
		case rel == "":
			for _, imp := range imports {
				if slices.Contains(implementations, imp) {
					t.Errorf("the SDK imports the backend implementation %s", imp)
				}
			}
			// Metrics reach the SDK through telemetry.Metrics; a program
			// that does not export them does not link Prometheus.
			for _, dep := range p.Deps {
				if strings.HasPrefix(dep, "github.com/prometheus/") {
					t.Errorf("the SDK depends on %s; it may report metrics only through telemetry.Metrics", dep)
				}
			}
		case top == "dag" || top == "openflow":
			for _, imp := range imports {
				if imp != "" && !strings.HasPrefix(imp, top+"/") && imp != top {
					t.Errorf("%s imports %q; it may import only the root package of this module", rel, module+"/"+imp)
				}
			}
		case top == "api" || top == "dashboard" || top == "server" || top == "metrics":
			for _, dep := range deps {
				if slices.Contains(implementations, dep) {
					t.Errorf("%s depends on the backend implementation %s; it may use only the client side of the seam", rel, dep)
				}
			}
			for _, imp := range imports {
				if strings.HasPrefix(imp, "internal/") {
					t.Errorf("%s imports %s; it may not use internal packages", rel, imp)
				}
			}
		}
		if top != "examples" {
			for _, imp := range imports {
				if strings.HasPrefix(imp, "examples/") {
					t.Errorf("%s imports %s: examples are leaves", rel, imp)
				}
			}
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("checked %d packages; go list found too few", checked)
	}
}
