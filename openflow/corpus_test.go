package openflow_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/openflow"
)

// corpusDir holds the flows of Windmill's test suite and MANIFEST.json
// with their expected results: $OPENFLOW_CORPUS, else the team's canonical
// copy (../shared/openflow-corpus from the repository root's parent),
// else the copy in testdata/corpus (see its NOTICE.md).
func corpusDir(t testing.TB) string {
	t.Helper()
	for _, d := range []string{os.Getenv("OPENFLOW_CORPUS"), "../../shared/openflow-corpus", "testdata/corpus"} {
		if d == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "MANIFEST.json")); err == nil {
			return d
		}
	}
	t.Fatal("no OpenFlow corpus: set OPENFLOW_CORPUS to the directory of MANIFEST.json")
	return ""
}

type manifest struct {
	Cases []struct {
		File  string       `json:"file"`
		Cases []corpusCase `json:"cases"`
	} `json:"cases"`
}

type corpusCase struct {
	Args      json.RawMessage `json:"args"`
	Variant   string          `json:"variant"`
	Events    []resumeStep    `json:"events"`
	Scenarios []scenario      `json:"scenarios"`
	Expect    expectation     `json:"expect"`
}

type expectation struct {
	Success        bool            `json:"success"`
	Skipped        *bool           `json:"skipped"`
	Result         json.RawMessage `json:"result"`
	ResultShape    string          `json:"result_shape"`
	ResultContains string          `json:"result_contains"`
	Attempts       int             `json:"attempts"`
}

type scenario struct {
	Name     string      `json:"name"`
	Replies  []*int      `json:"server_replies_in_order"`
	Received []int       `json:"bytes_received_in_order"`
	Expect   expectation `json:"expect"`
}

type resumeStep struct {
	AfterStep string          `json:"after_step"`
	Approve   bool            `json:"approve"`
	Payload   json.RawMessage `json:"payload"`
	Approver  *string         `json:"approver"`
}

func loadManifest(t testing.TB) manifest {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(corpusDir(t), "MANIFEST.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decode MANIFEST.json: %v", err)
	}
	return m
}

// TestCorpus runs every flow of the corpus, every case of MANIFEST.json,
// on SQLite and PostgreSQL, and checks success, the exact result, and
// the partial checks the Windmill tests make (shapeChecks).
func TestCorpus(t *testing.T) {
	m := loadManifest(t)
	dir := corpusDir(t)
	seen := map[string]bool{}
	for _, entry := range m.Cases {
		seen[strings.TrimSuffix(entry.File, ".json")] = true
	}
	for key := range shapeChecks {
		if !seen[strings.SplitN(key, "#", 2)[0]] {
			t.Errorf("shape check %q names no corpus file", key)
		}
	}
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			for _, entry := range m.Cases {
				doc, err := os.ReadFile(filepath.Join(dir, entry.File))
				if err != nil {
					t.Fatal(err)
				}
				name := strings.TrimSuffix(entry.File, ".json")
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					f, err := openflow.Parse(doc)
					if err != nil {
						t.Fatalf("parse: %v", err)
					}
					requireRunners(t, f)
					env := startEnv(t, kind)
					for i, c := range entry.Cases {
						t.Run(caseName(i, c), func(t *testing.T) {
							env.t = t
							runCorpusCase(t, env, name, i, doc, c)
						})
					}
				})
			}
		})
	}
}

func caseName(i int, c corpusCase) string {
	if c.Variant != "" {
		return strconv.Itoa(i) + "_" + strings.NewReplacer("=", "_", " ", "_").Replace(c.Variant)
	}
	return strconv.Itoa(i)
}

func runCorpusCase(t *testing.T, env *flowEnv, name string, i int, doc []byte, c corpusCase) {
	if c.Variant == "error_include_result=false" {
		doc = bytes.Replace(doc, []byte(`"error_include_result": true`), []byte(`"error_include_result": false`), 1)
	}
	key := fmt.Sprintf("%s#%d", name, i)
	switch {
	case len(c.Scenarios) > 0:
		for _, sc := range c.Scenarios {
			t.Run(sc.Name, func(t *testing.T) {
				env.t = t
				srv := startByteServer(t, sc.Replies)
				res := env.run(doc, withPort(c.Args, srv.port()))
				checkResult(t, key+"#"+sc.Name, res, sc.Expect)
				if got := srv.received(); !equalInts(got, sc.Received) {
					t.Errorf("server received %v, want %v", got, sc.Received)
				}
			})
		}
	case name == "retry_then_failure_module_socket_harness":
		// "server replies: none, none (step a fails twice -> IndexError),
		// none (failure module fails once), 42"
		srv := startByteServer(t, []*int{nil, nil, nil, ptr(42)})
		res := env.run(doc, withPort(c.Args, srv.port()))
		checkResult(t, key, res, c.Expect)
		if got, want := srv.received(), []int{0, 0, 255, 255}; !equalInts(got, want) {
			t.Errorf("server received %v, want %v", got, want)
		}
	case len(c.Events) > 0:
		runID := env.start(doc, string(c.Args))
		for _, ev := range c.Events {
			resumeAfter(t, env, runID, ev)
		}
		checkResult(t, key, env.wait(runID), c.Expect)
	default:
		runID := env.start(doc, string(c.Args))
		res := env.wait(runID)
		checkResult(t, key, res, c.Expect)
		if c.Expect.Attempts > 0 {
			if got := moduleAttempts(env, runID, "fails"); got != c.Expect.Attempts {
				t.Errorf("module ran %d times, want %d", got, c.Expect.Attempts)
			}
		}
	}
}

// checkResult compares a run's result with the manifest's expectation.
func checkResult(t *testing.T, key string, res *openflow.Result, want expectation) {
	t.Helper()
	if res.Success != want.Success {
		t.Errorf("success = %v, want %v; result %s", res.Success, want.Success, res.Result)
	}
	if want.Skipped != nil && res.Skipped != *want.Skipped {
		t.Errorf("skipped = %v, want %v", res.Skipped, *want.Skipped)
	}
	if len(want.Result) > 0 && !jsonEqual(res.Result, want.Result) {
		t.Errorf("result = %s, want %s", res.Result, want.Result)
	}
	if want.ResultContains != "" && !strings.Contains(string(res.Result), want.ResultContains) {
		t.Errorf("result %s does not contain %q", res.Result, want.ResultContains)
	}
	if want.ResultShape != "" {
		check, ok := shapeChecks[key]
		if !ok {
			t.Fatalf("no shape check for %s (%q)", key, want.ResultShape)
		}
		var v any
		if err := json.Unmarshal(res.Result, &v); err != nil {
			t.Fatalf("result is not JSON: %s", res.Result)
		}
		if err := check(v); err != nil {
			t.Errorf("result %s: %v (the manifest says: %s)", res.Result, err, want.ResultShape)
		}
	}
}

// moduleAttempts counts the attempt steps of a top-level module (id, id#1,
// id#2, …).
func moduleAttempts(env *flowEnv, runID, id string) int {
	n := 0
	for _, s := range env.steps(runID) {
		if s.StepName == id || strings.HasPrefix(s.StepName, id+"#") && !strings.Contains(s.StepName, "@") {
			n++
		}
	}
	return n
}

func withPort(args json.RawMessage, port int) string {
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil || m == nil {
		m = map[string]any{}
	}
	m["port"] = port
	b, _ := json.Marshal(m)
	return string(b)
}

func ptr[T any](v T) *T { return &v }

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
