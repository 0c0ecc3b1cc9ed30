package openflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// DefaultScriptTimeout bounds a script when its module sets no timeout:
// 900 s, Windmill's default job timeout.
const DefaultScriptTimeout = 900 * time.Second

// maxLogBytes bounds the log kept per script run: its last 256 KiB.
const maxLogBytes = 256 << 10

// logLinesInError is how many of the last log lines an ExecutionErr
// message quotes.
const logLinesInError = 20

// RunnerMissingError reports a script runner (an interpreter or a
// toolchain) that is not installed. It names the binary and how to
// install it.
type RunnerMissingError struct {
	// Language is the rawscript language, e.g. "bun".
	Language string
	// Binary is the program looked for, e.g. "bun".
	Binary string
	// Looked lists where it was looked for.
	Looked []string
	// Install says how to install it.
	Install string
}

// Error names the binary, where it was looked for and how to install it.
func (e *RunnerMissingError) Error() string {
	return fmt.Sprintf("the %s runner is not installed: no %q in %s; install it with: %s",
		e.Language, e.Binary, strings.Join(e.Looked, " or "), e.Install)
}

// runners finds the runner binaries and runs scripts as subprocesses.
type runners struct {
	dir string // the npm prefix bun and deno are installed into

	mu       sync.Mutex
	resolved map[string]string // binary name → path, once found
}

func newRunners(dir string) *runners {
	return &runners{dir: dir, resolved: map[string]string{}}
}

// DefaultRunnersDir is where bun and deno are looked for when not on PATH
// (an npm prefix: <dir>/node_modules/.bin): $HOME/.cache/openworkflow-runners.
func DefaultRunnersDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "openworkflow-runners")
	}
	return filepath.Join(os.TempDir(), "openworkflow-runners")
}

// binaryOf returns the program a language runs with.
func binaryOf(lang string) string {
	switch lang {
	case "python3", "bash", "bun", "deno", "go":
		return lang
	}
	return ""
}

// lookup returns the path of the binary for lang: on PATH, or (bun, deno)
// under the runners directory. python3 is resolved to the interpreter's
// own executable (skipping a version manager's shim, which costs a
// process per run).
func (r *runners) lookup(lang string) (string, error) {
	bin := binaryOf(lang)
	if bin == "" {
		return "", fmt.Errorf("unsupported language %q: this engine runs %s scripts", lang, strings.Join(Languages, ", "))
	}
	r.mu.Lock()
	p, ok := r.resolved[bin]
	r.mu.Unlock()
	if ok {
		return p, nil
	}
	looked := []string{"PATH"}
	p, err := exec.LookPath(bin)
	if err != nil && (bin == "bun" || bin == "deno") && r.dir != "" {
		local := filepath.Join(r.dir, "node_modules", ".bin", bin)
		looked = append(looked, filepath.Dir(local))
		if st, serr := os.Stat(local); serr == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			p, err = local, nil
		}
	}
	if err != nil {
		return "", &RunnerMissingError{Language: lang, Binary: bin, Looked: looked, Install: installHint(bin, r.dir)}
	}
	if bin == "python3" {
		p = realPython(p)
	}
	r.mu.Lock()
	r.resolved[bin] = p
	r.mu.Unlock()
	return p, nil
}

func installHint(bin, dir string) string {
	switch bin {
	case "bun", "deno":
		return fmt.Sprintf("npm i --prefix %s %s (or put %s on PATH)", dir, bin, bin)
	case "go":
		return "the Go toolchain from https://go.dev/dl (go on PATH)"
	}
	return "apt-get install " + bin
}

// realPython asks the interpreter found on PATH for its executable.
func realPython(shim string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, shim, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		return shim
	}
	p := strings.TrimSpace(string(out))
	if st, err := os.Stat(p); err != nil || st.IsDir() {
		return shim
	}
	return p
}

// scriptJob is one script execution.
type scriptJob struct {
	lang    string
	content string
	args    json.RawMessage // a JSON object
	dir     string          // working directory, existing and empty
	timeout time.Duration
	env     []string  // extra KEY=value
	live    io.Writer // also receives the output as it comes, when set
}

// scriptResult is what a script run produced. A failed script (an
// exception, a non-zero exit, a timeout) is not a Go error: failed is set
// and result holds the error object {name, message, stack?}.
type scriptResult struct {
	result  json.RawMessage
	failed  bool
	logs    string
	process time.Duration // the subprocess's wall time, start included
}

// run executes job; it returns an error only when the script could not
// be run at all (a missing runner, an unwritable directory) or ctx ended.
func (r *runners) run(ctx context.Context, job scriptJob) (scriptResult, error) {
	bin, err := r.lookup(job.lang)
	if err != nil {
		return scriptResult{}, err
	}
	prep, err := prepare(job, bin)
	if err != nil {
		return scriptResult{}, err
	}
	if err := os.WriteFile(filepath.Join(job.dir, "args.json"), job.args, 0o600); err != nil {
		return scriptResult{}, err
	}
	timeout := job.timeout
	if timeout <= 0 {
		timeout = DefaultScriptTimeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(pctx, prep.argv[0], prep.argv[1:]...)
	cmd.Dir = job.dir
	cmd.Env = append(append(os.Environ(), prep.env...), job.env...)
	var logs tailBuffer
	var out io.Writer = &logs
	if job.live != nil {
		out = io.MultiWriter(&logs, job.live)
	}
	cmd.Stdout, cmd.Stderr = out, out
	setProcessGroup(cmd)
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	runErr := cmd.Run()
	res := scriptResult{logs: logs.String(), process: time.Since(start)}
	if ctx.Err() != nil {
		return res, ctx.Err() // the run was canceled or the worker stops: not the script's fault
	}
	if pctx.Err() != nil {
		res.failed = true
		res.result = errorObject("ExecutionErr", fmt.Sprintf("timeout after %s: the script ran longer than its module's timeout", timeout))
		return res, nil
	}
	exitCode := 0
	var ee *exec.ExitError
	switch {
	case runErr == nil:
	case errors.As(runErr, &ee):
		exitCode = ee.ExitCode()
	default:
		return res, fmt.Errorf("run %s: %w", prep.argv[0], runErr)
	}
	res.result, res.failed = prep.collect(job.dir, exitCode, res.logs)
	return res, nil
}

// prepared is a language's command line and how it turns its outputs
// into a result.
type prepared struct {
	argv    []string
	env     []string
	collect func(dir string, exitCode int, logs string) (json.RawMessage, bool)
}

func prepare(job scriptJob, bin string) (prepared, error) {
	switch job.lang {
	case "python3":
		return preparePython(job, bin)
	case "bun", "deno":
		return prepareJS(job, bin)
	case "bash":
		return prepareBash(job, bin)
	case "go":
		return prepareGo(job, bin)
	}
	return prepared{}, fmt.Errorf("unsupported language %q", job.lang)
}

// collectResultFile reads result.json written by a wrapper: on exit 0 the
// result, otherwise the error object; without one, a non-zero exit is an
// ExecutionErr quoting the last log lines.
func collectResultFile(prog string) func(string, int, string) (json.RawMessage, bool) {
	return func(dir string, exitCode int, logs string) (json.RawMessage, bool) {
		b, err := os.ReadFile(filepath.Join(dir, "result.json"))
		if err == nil && json.Valid(b) {
			if exitCode == 0 {
				return compact(b), false
			}
			if jsonKind(b) == "an object" {
				return compact(b), true
			}
		}
		if exitCode == 0 {
			return errorObject("ExecutionErr", fmt.Sprintf("the script's result is not valid JSON (result.json: %v), last log lines:\n%s", readErrText(err, b), lastLines(logs))), true
		}
		return exitError(prog, exitCode, logs), true
	}
}

func readErrText(err error, b []byte) string {
	if err != nil {
		return err.Error()
	}
	if len(b) > 200 {
		b = b[:200]
	}
	return fmt.Sprintf("%q", b)
}

// exitError is Windmill's error for a script that exited non-zero without
// an error object.
func exitError(prog string, exitCode int, logs string) json.RawMessage {
	return errorObject("ExecutionErr", fmt.Sprintf("exit code for %q: %d, last log lines:\n%s", prog, exitCode, lastLines(logs)))
}

// errorObject is {"name": name, "message": message} (the inner error
// object; results wrap it as {"error": …}).
func errorObject(name, message string) json.RawMessage {
	return mustJSON(struct {
		Name    string `json:"name"`
		Message string `json:"message"`
	}{name, message})
}

// lastLines returns the last logLinesInError lines of logs, trimmed.
func lastLines(logs string) string {
	lines := strings.Split(strings.TrimRight(logs, "\n"), "\n")
	if len(lines) > logLinesInError {
		lines = lines[len(lines)-logLinesInError:]
	}
	return strings.Join(lines, "\n")
}

// tailBuffer keeps the last maxLogBytes written to it. It is safe for the
// two writers (stdout and stderr copiers) of one process.
type tailBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	dropped bool
}

// Write appends p, dropping the oldest bytes beyond maxLogBytes.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if t.b.Len() > maxLogBytes {
		t.b.Next(t.b.Len() - maxLogBytes)
		t.dropped = true
	}
	return len(p), nil
}

// String returns the kept log, marked when its start was dropped.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dropped {
		return "[… earlier output dropped]\n" + t.b.String()
	}
	return t.b.String()
}
