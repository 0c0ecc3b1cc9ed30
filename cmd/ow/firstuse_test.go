package main

// Tests of what a new user met on first use of the CLI (issue 10, item 11).

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/config"
	"github.com/openworkflow-go/openworkflow/internal/demo/goindex"
)

// shellWords splits a printed command line as a POSIX shell does, by
// letting /bin/sh parse it: the command's name is replaced by a function
// printing its arguments.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	out, err := exec.Command("sh", "-c", `ow() { for a in "$@"; do printf '%s\0' "$a"; done; }; `+line).Output()
	if err != nil {
		t.Fatalf("sh cannot run %q: %v", line, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

func TestNextPageHintKeepsTheFilters(t *testing.T) {
	t.Parallel()
	bothEnvs(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		c := e.client()
		oldest, err := c.StartByName(ctx, "greet", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"other", "greet"} {
			if _, err := c.StartByName(ctx, name, "", nil); err != nil {
				t.Fatal(err)
			}
		}
		out := e.ok("runs", "list", "--workflow", "greet", "--limit", "1", "--namespace", "default").stdout
		_, hint, found := strings.Cut(out, "next page: ")
		if !found {
			t.Fatalf("no next-page hint:\n%s", out)
		}
		hint = strings.TrimSpace(hint)
		mustContain(t, "hint", hint, "--workflow greet", "--limit 1", "--namespace default", "--cursor ")
		args := shellWords(t, hint)
		if args[0] != "runs" || args[1] != "list" {
			t.Fatalf("hint %q is not an 'ow runs list' command", hint)
		}
		// The hint alone, without the env's flags, selects the same
		// database.
		var stdout, stderr strings.Builder
		if code := execute(ctx, append(args, "--json"), &stdout, &stderr, e.dir); code != 0 {
			t.Fatalf("the hinted command fails: %s", stderr.String())
		}
		page := decode[backend.Page[backend.WorkflowRun]](t, result{stdout: stdout.String()})
		if len(page.Data) != 1 || page.Data[0].ID != oldest.ID {
			var got []string
			for _, r := range page.Data {
				got = append(got, r.WorkflowName+" "+r.ID)
			}
			t.Errorf("the hinted command lists %v; want only the oldest greet run %s", got, oldest.ID)
		}
	})
}

func TestNextPageHintMasksThePassword(t *testing.T) {
	t.Parallel()
	a := &app{}
	root := a.rootCommand()
	cmd, rest, err := root.Find([]string{"runs", "list", "--postgres-url", "postgres://u:secret@db/x", "--status", "failed"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatal(err)
	}
	hint := nextPageCommand(cmd, "")
	if strings.Contains(hint, "secret") {
		t.Errorf("hint prints the password: %s", hint)
	}
	mustContain(t, "hint", hint, "ow runs list", "--postgres-url postgres://u:xxxxx@db/x", "--status failed")
}

func TestAGroupCommandAloneShowsItsHelp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, group := range []string{"runs", "signal"} {
		r := e.ok(group)
		mustContain(t, "ow "+group, r.stdout, "Usage:", "ow "+group+" [command]")
	}
}

func TestDemoOfOnePackageSpeaksInTheSingular(t *testing.T) {
	t.Parallel()
	if _, err := goindex.SourceRoot(); err != nil {
		t.Skip(err)
	}
	e := newEnv(t)
	out := e.ok("demo", "--packages", "container/list", "--sleep", "0").stdout
	mustContain(t, "demo", out, "indexing 1 package under", "container/list   1 file\n", "report: 1 package, 1 file, ")
	for _, wrong := range []string{"1 packages", "1 files"} {
		if strings.Contains(out, wrong) {
			t.Errorf("demo prints %q:\n%s", wrong, out)
		}
	}
}

func TestDoctorJSONGivesTheOpenTimeInMilliseconds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	raw := decode[map[string]any](t, e.ok("doctor", "--json"))
	if _, ok := raw["openTime"]; ok {
		t.Errorf("doctor --json has an unlabelled openTime: %v", raw["openTime"])
	}
	ms, ok := raw["openTimeMs"].(float64)
	if !ok || ms <= 0 || ms > 60_000 {
		t.Errorf("openTimeMs = %v; want the milliseconds opening took", raw["openTimeMs"])
	}
	d := decode[config.Diagnosis](t, e.ok("doctor", "--json"))
	if d.OpenTime <= 0 || d.OpenTime > time.Minute {
		t.Errorf("config.Diagnosis decodes its own JSON to OpenTime %v", d.OpenTime)
	}
}

func TestPostgresRefusalsAreToldApartFromAnUnreachableServer(t *testing.T) {
	t.Parallel()
	adminPool(t) // skips or fails as the other PostgreSQL tests do
	base, err := url.Parse(testPostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	with := func(user, db string) string {
		u := *base
		if user != "" {
			u.User = url.User(user)
		}
		if db != "" {
			u.Path = "/" + db
		}
		return u.String()
	}
	role, db := uniqueName("ow_no_role"), uniqueName("ow_no_db")
	unreachable := *base
	unreachable.Host = "127.0.0.1:1"
	tests := []struct {
		name, url string
		want      []string
	}{
		{"a missing role", with(role, ""), []string{"refused role " + `"` + role + `"`, "does not exist", "CREATE ROLE", "--postgres-url", "SQLSTATE 28000"}},
		{"a missing database", with("", db), []string{"has no database " + `"` + db + `"`, "createdb " + db, "--postgres-url", "SQLSTATE 3D000"}},
		{"a server that does not answer", unreachable.String(), []string{"cannot reach PostgreSQL at", "start it"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, cmd := range [][]string{{"runs", "list"}, {"doctor"}} {
				var out, errOut strings.Builder
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				code := execute(ctx, append([]string{"--postgres-url", tt.url}, cmd...), &out, &errOut, t.TempDir())
				cancel()
				if code != 1 {
					t.Errorf("ow %s: exit %d, want 1", cmd[0], code)
				}
				mustContain(t, "ow "+cmd[0]+" stderr", errOut.String(), tt.want...)
				if tt.name != "a server that does not answer" && strings.Contains(errOut.String()+out.String(), "cannot reach") {
					t.Errorf("ow %s says the server cannot be reached, though it answered:\n%s%s", cmd[0], out.String(), errOut.String())
				}
			}
		})
	}
}

// TestHintsSayHowOwWasRun: the command lines ow quotes in its hints are
// the ones the user can paste: "ow …" for an installed binary, "go run
// ./cmd/ow …" under go run in the checkout (as the README runs it), the
// path to cmd/ow from a subdirectory, and the module path outside a
// checkout.
func TestHintsSayHowOwWasRun(t *testing.T) {
	checkout, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	goRunExe := filepath.Join(os.TempDir(), "go-build2795", "b001", "exe", "ow")
	for _, c := range []struct{ exe, cwd, want string }{
		{"/usr/local/bin/ow", checkout, "ow"},
		{filepath.Join(t.TempDir(), "exe", "ow"), checkout, "ow"}, // not the go command's build directory
		{goRunExe, checkout, "go run ./cmd/ow"},
		{goRunExe, filepath.Join(checkout, "docs"), "go run ../cmd/ow"},
		{goRunExe, filepath.Join(checkout, "cmd", "ow"), "go run ."},
		{goRunExe, t.TempDir(), "go run github.com/openworkflow-go/openworkflow/cmd/ow"},
	} {
		if got := invocationFor(c.exe, c.cwd); got != c.want {
			t.Errorf("invocationFor(%s, %s) = %q, want %q", c.exe, c.cwd, got, c.want)
		}
	}
	a := &app{inv: "go run ./cmd/ow"}
	if got := a.hint("no run \"x\": check the id with 'ow runs list' (and --namespace)"); got != "no run \"x\": check the id with 'go run ./cmd/ow runs list' (and --namespace)" {
		t.Errorf("hint = %q", got)
	}
	if got := (&app{inv: "ow"}).hint("see 'ow runs get x'"); got != "see 'ow runs get x'" {
		t.Errorf("hint of an installed ow = %q", got)
	}
}
