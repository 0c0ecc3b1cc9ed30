package bench

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// tsFiles are the TypeScript bench: the node script and the package.json
// naming the npm packages it needs (installed at run time, never
// committed).
//
//go:embed tsbench/bench.mjs tsbench/package.json
var tsFiles embed.FS

// npmTimeout bounds the npm install.
const npmTimeout = 5 * time.Minute

// tsStopDelay is how long the node bench gets after SIGTERM to drop its
// database and stop its worker processes.
const tsStopDelay = 60 * time.Second

// runTS installs the TypeScript OpenWorkflow in a temporary directory and
// runs tsbench/bench.mjs there with the same workloads, counts,
// concurrency and repetitions; it returns every measurement it printed
// (one JSON line each) and the versions measured.
func runTS(ctx context.Context, o Options, admin *pgAdmin) ([]Result, string, error) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, "", fmt.Errorf("%s not found on PATH: the TypeScript comparison needs Node.js 20 or later and npm", tool)
		}
	}
	dir, err := os.MkdirTemp(o.TempDir, "ow-bench-ts-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	for _, f := range []string{"bench.mjs", "package.json"} {
		b, err := tsFiles.ReadFile("tsbench/" + f)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, f), b, 0o644)
		}
		if err != nil {
			return nil, "", err
		}
	}
	fmt.Fprintf(o.Progress, "TypeScript: npm install --prefix %s (openworkflow@0.10, postgres@3, @opentelemetry/api@1)\n", dir)
	ictx, cancel := context.WithTimeout(ctx, npmTimeout)
	defer cancel()
	npm := exec.CommandContext(ictx, "npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error")
	if out, err := npm.CombinedOutput(); err != nil {
		return nil, "", fmt.Errorf("npm install: %w\n%s", err, out)
	}
	version := tsVersion(ctx, dir)

	prefix := dbPrefix + "ts_" + randomHex(4) + "_"
	runs := map[string]int{}
	for _, w := range o.Workloads {
		runs[w] = o.runsFor(w)
	}
	rj, _ := json.Marshal(runs)
	adminURL := ""
	if admin != nil {
		adminURL = o.PostgresURL
	}
	args := []string{filepath.Join(dir, "bench.mjs"),
		"--admin-url", adminURL, "--db-prefix", prefix,
		"--workloads", strings.Join(o.Workloads, ","), "--runs", string(rj),
		"--concurrency", strconv.Itoa(o.Concurrency), "--repeat", strconv.Itoa(o.Repeat),
		"--backends", strings.Join(o.Backends, ","), "--tmp", dir}
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = dir
	cmd.Stderr = o.Progress
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = tsStopDelay
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, version, err
	}
	if err := cmd.Start(); err != nil {
		return nil, version, err
	}
	rs, perr := readTSResults(stdout, o.Progress)
	werr := cmd.Wait()
	if admin != nil { // whatever an interrupted node bench left behind
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		werr = errors.Join(werr, admin.dropPrefixed(cctx, prefix))
	}
	if err := errors.Join(perr, werr); err != nil {
		return rs, version, fmt.Errorf("node bench.mjs: %w", err)
	}
	return rs, version, nil
}

// readTSResults reads the node bench's JSON lines as TS results, echoing
// a summary of each to progress.
func readTSResults(r io.Reader, progress io.Writer) ([]Result, error) {
	var rs []Result
	var errs []error
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var res Result
		if err := json.Unmarshal(line, &res); err != nil {
			errs = append(errs, fmt.Errorf("unreadable line %q: %w", line, err))
			continue
		}
		res.Engine = EngineTS
		if res.Repeat == 0 && res.Skipped == "" && res.Error == "" {
			res.Repeat = 1
		}
		rs = append(rs, res)
		switch {
		case res.Error != "":
			fmt.Fprintf(progress, "TS %s %s: FAILED: %s\n", res.Label(), res.Backend, res.Error)
		case res.Skipped != "":
			fmt.Fprintf(progress, "TS %s %s: not measured: %s\n", res.Label(), res.Backend, res.Skipped)
		default:
			fmt.Fprintf(progress, "TS %s %s: %s\n", res.Label(), res.Backend, summary(res))
		}
	}
	return rs, errors.Join(append(errs, sc.Err())...)
}

// tsVersion says which openworkflow package and node ran, e.g.
// "openworkflow 0.10.1 on node v20.20.2".
func tsVersion(ctx context.Context, dir string) string {
	var pkg struct{ Version string }
	b, _ := os.ReadFile(filepath.Join(dir, "node_modules", "openworkflow", "package.json"))
	_ = json.Unmarshal(b, &pkg)
	node, _ := exec.CommandContext(ctx, "node", "--version").Output()
	return fmt.Sprintf("openworkflow %s on node %s", orUnknown(pkg.Version), strings.TrimSpace(string(node)))
}
