package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// readyTimeout bounds a worker process's start-up (open, register).
const readyTimeout = 60 * time.Second

// procStopTimeout bounds a worker process's exit after SIGTERM, before it
// is killed.
const procStopTimeout = stopTimeout + 10*time.Second

// The lines of the worker process protocol: the process prints readyLine
// on stdout once it can start, starts its worker when it reads goLine on
// stdin, and stops on SIGTERM or when stdin closes.
const (
	readyLine = "ready"
	goLine    = "go"
)

// WorkerMain is the body of a W5 worker process ("ow bench worker"): it
// opens the backend, registers the bench workflows, prints "ready", waits
// for "go" on stdin, then runs a worker until ctx ends (SIGTERM) or stdin
// closes, and stops it gracefully. args:
//
//	--backend postgres|sqlite  --dsn URL-or-file  --concurrency N  [--cpuprofile FILE]
func WorkerMain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ow bench worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kind := fs.String("backend", "", "postgres or sqlite")
	dsn := fs.String("dsn", "", "PostgreSQL URL or SQLite file")
	concurrency := fs.Int("concurrency", DefaultConcurrency, "worker slots")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the worker to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dsn == "" || (*kind != Postgres && *kind != SQLite) || *concurrency < 1 {
		return fmt.Errorf("bench worker: want --backend postgres|sqlite, --dsn and --concurrency >= 1, got %q %q %d", *kind, *dsn, *concurrency)
	}
	b, err := openBackend(ctx, *kind, *dsn)
	if err != nil {
		return err
	}
	defer b.Close()
	w, err := newWorker(b, W5, *concurrency, stderr, nil)
	if err != nil {
		return err
	}
	lines := make(chan string)
	go func() { // ends when the parent closes stdin
		defer close(lines)
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	fmt.Fprintln(stdout, readyLine)
	select {
	case <-ctx.Done():
		return nil
	case l, ok := <-lines:
		if !ok || l != goLine {
			return nil
		}
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-lines: // stdin closed: the parent is gone
	}
	sctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	return w.Stop(sctx)
}

// procGroup is a set of started worker processes.
type procGroup struct {
	procs []*proc
}

type proc struct {
	cmd   *exec.Cmd
	stdin *os.File // the parent's end of the process's stdin
	done  chan error
	errb  *bytes.Buffer
}

// startProcs starts n worker processes on t and waits until each is ready.
// On error every process started is stopped.
func startProcs(ctx context.Context, o Options, t target, n int) (*procGroup, error) {
	if o.WorkerCommand == nil {
		return nil, errors.New("W5 needs worker processes, and no worker command was configured")
	}
	g := &procGroup{}
	for i := range n {
		p, err := startProc(ctx, o, t)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("start worker process %d of %d: %w", i+1, n, err), g.stop())
		}
		g.procs = append(g.procs, p)
	}
	return g, nil
}

func startProc(ctx context.Context, o Options, t target) (*proc, error) {
	args := []string{"--backend", t.kind(), "--dsn", t.dsn(), "--concurrency", strconv.Itoa(o.Concurrency)}
	cmd := o.WorkerCommand(ctx, args)
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ready := &readyWriter{ready: make(chan struct{})}
	errb := &bytes.Buffer{}
	cmd.Stdin = r
	cmd.Stdout = ready
	cmd.Stderr = io.MultiWriter(o.Progress, &limitedWriter{b: errb, n: 4096})
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = procStopTimeout
	if err := cmd.Start(); err != nil {
		_, _ = r.Close(), w.Close()
		return nil, err
	}
	_ = r.Close()
	p := &proc{cmd: cmd, stdin: w, done: make(chan error, 1), errb: errb}
	go func() { p.done <- cmd.Wait() }()
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case <-ready.ready:
		return p, nil
	case err := <-p.done:
		p.done <- err
		return nil, errors.Join(fmt.Errorf("worker process exited before it was ready: %v\n%s", err, errb), p.stop())
	case <-timer.C:
		return nil, errors.Join(fmt.Errorf("worker process not ready after %s", readyTimeout), p.stop())
	case <-ctx.Done():
		return nil, errors.Join(ctx.Err(), p.stop())
	}
}

// release lets every process start its worker.
func (g *procGroup) release() {
	for _, p := range g.procs {
		_, _ = p.stdin.Write([]byte(goLine + "\n"))
	}
}

// stop sends SIGTERM to every process and waits for them to exit
// (killing one that takes longer than procStopTimeout). It fails if a
// process did not exit cleanly.
func (g *procGroup) stop() error {
	var wg sync.WaitGroup
	errs := make([]error, len(g.procs))
	for i, p := range g.procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.stop()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (p *proc) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	defer p.stdin.Close()
	timer := time.NewTimer(procStopTimeout)
	defer timer.Stop()
	select {
	case err := <-p.done:
		if err != nil {
			return fmt.Errorf("worker process %d: %v\n%s", p.cmd.Process.Pid, err, p.errb)
		}
		return nil
	case <-timer.C:
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("worker process %d did not stop within %s of SIGTERM; killed", p.cmd.Process.Pid, procStopTimeout)
	}
}

// readyWriter is a process's stdout: it closes ready at the first
// readyLine and discards the rest.
type readyWriter struct {
	mu    sync.Mutex
	buf   []byte
	seen  bool
	ready chan struct{}
}

func (w *readyWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.seen {
		w.buf = append(w.buf, b...)
		for _, line := range bytes.Split(w.buf, []byte("\n")) {
			if string(bytes.TrimSpace(line)) == readyLine {
				w.seen = true
				close(w.ready)
				w.buf = nil
				break
			}
		}
	}
	return len(b), nil
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	b *bytes.Buffer
	n int
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if room := w.n - w.b.Len(); room > 0 {
		w.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
