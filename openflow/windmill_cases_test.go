package openflow_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/openflow"
)

// windmillCasesDir holds flows transcribed from Windmill's own tests for
// behaviours the team corpus does not cover, with a MANIFEST.json in the
// corpus's format (see its "about" and each entry's "source").
const windmillCasesDir = "testdata/windmill"

// TestWindmillCases runs every case of testdata/windmill/MANIFEST.json on
// SQLite and PostgreSQL and checks success and the exact result.
func TestWindmillCases(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(windmillCasesDir, "MANIFEST.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decode MANIFEST.json: %v", err)
	}
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			env := startEnv(t, kind)
			for _, entry := range m.Cases {
				doc, err := os.ReadFile(filepath.Join(windmillCasesDir, entry.File))
				if err != nil {
					t.Fatal(err)
				}
				name := strings.TrimSuffix(entry.File, ".json")
				t.Run(name, func(t *testing.T) {
					f, err := openflow.Parse(doc)
					if err != nil {
						t.Fatalf("parse: %v", err)
					}
					requireRunners(t, f)
					for i, c := range entry.Cases {
						t.Run(caseName(i, c), func(t *testing.T) {
							env.t = t
							if len(c.Expect.Result) == 0 {
								t.Fatal("a case here must give its exact expected result")
							}
							runID := env.start(doc, string(c.Args))
							res := env.wait(runID)
							checkResult(t, name, res, c.Expect)
							if t.Failed() {
								t.Logf("steps:\n%s", env.describeSteps(runID))
							}
						})
					}
				})
			}
		})
	}
}
