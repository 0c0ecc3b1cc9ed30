package crash

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The step log is a file that every worker process opens with O_APPEND and
// writes one line to, in a single write, per event:
//
//	ready <pid> <unix-nanos>
//	start <run-id> <step-key> <pid> <unix-nanos>
//	end   <run-id> <step-key> <pid> <unix-nanos>
//
// O_APPEND makes each write land whole at the end of the file whatever the
// other processes do, and a process killed with SIGKILL loses nothing it
// wrote (the data is in the page cache). Times are wall-clock nanoseconds,
// one clock for every process of the host.

// Kinds of step-log events.
const (
	eventReady = "ready"
	eventStart = "start"
	eventEnd   = "end"
)

// stepLogWriter appends events of this process to the step log.
type stepLogWriter struct {
	mu  sync.Mutex
	f   *os.File
	pid int
}

func openStepLog(path string) (*stepLogWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open step log: %w", err)
	}
	return &stepLogWriter{f: f, pid: os.Getpid()}, nil
}

func (w *stepLogWriter) ready() error {
	return w.write(fmt.Sprintf("%s %d %d\n", eventReady, w.pid, time.Now().UnixNano()))
}

func (w *stepLogWriter) step(kind, runID, key string) error {
	return w.write(fmt.Sprintf("%s %s %s %d %d\n", kind, runID, key, w.pid, time.Now().UnixNano()))
}

func (w *stepLogWriter) write(line string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.f.WriteString(line); err != nil {
		return fmt.Errorf("append to step log: %w", err)
	}
	return nil
}

func (w *stepLogWriter) Close() error { return w.f.Close() }

// logEvent is one parsed line of the step log.
type logEvent struct {
	Kind  string
	RunID string // empty for ready
	Key   string // empty for ready
	PID   int
	At    time.Time
}

// readStepLog parses the step log. A last line without its newline (being
// written as we read) is left for the next read.
func readStepLog(path string) ([]logEvent, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read step log: %w", err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	} else {
		data = nil
	}
	var events []logEvent
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		ev, err := parseLogLine(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("step log line %d: %w", n, err)
		}
		events = append(events, ev)
	}
	return events, sc.Err()
}

func parseLogLine(line string) (logEvent, error) {
	f := strings.Fields(line)
	var ev logEvent
	switch {
	case len(f) == 3 && f[0] == eventReady:
		ev = logEvent{Kind: f[0]}
		f = f[1:]
	case len(f) == 5 && (f[0] == eventStart || f[0] == eventEnd):
		ev = logEvent{Kind: f[0], RunID: f[1], Key: f[2]}
		f = f[3:]
	default:
		return ev, fmt.Errorf("malformed line %q", line)
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		return ev, fmt.Errorf("bad pid in %q: %w", line, err)
	}
	nanos, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return ev, fmt.Errorf("bad time in %q: %w", line, err)
	}
	ev.PID, ev.At = pid, time.Unix(0, nanos)
	return ev, nil
}

// stepKey identifies a durable step of a run.
type stepKey struct{ RunID, Key string }

func (k stepKey) String() string { return k.RunID + "/" + k.Key }

// stepExecution is one execution of a step function by one process: its
// start and, unless the process died first, its end.
type stepExecution struct {
	stepKey
	PID        int
	Start, End time.Time // End is zero while running or after a crash
}

func (e stepExecution) String() string {
	end := "never"
	if !e.End.IsZero() {
		end = e.End.Format("15:04:05.000000")
	}
	return fmt.Sprintf("%s by pid %d from %s to %s", e.stepKey, e.PID, e.Start.Format("15:04:05.000000"), end)
}

// executions pairs the start and end events of the log into executions,
// grouped by step. Within one (run, step, process) starts and ends pair in
// order.
func executions(events []logEvent) map[stepKey][]stepExecution {
	type slot struct {
		stepKey
		pid int
	}
	open := map[slot][]int{} // indexes into byStep[key] of unended executions
	byStep := map[stepKey][]stepExecution{}
	for _, ev := range events {
		k := stepKey{ev.RunID, ev.Key}
		s := slot{k, ev.PID}
		switch ev.Kind {
		case eventStart:
			byStep[k] = append(byStep[k], stepExecution{stepKey: k, PID: ev.PID, Start: ev.At})
			open[s] = append(open[s], len(byStep[k])-1)
		case eventEnd:
			if idx := open[s]; len(idx) > 0 {
				byStep[k][idx[0]].End = ev.At
				open[s] = idx[1:]
			}
		}
	}
	return byStep
}

// overlapping returns the pairs of executions of one step whose time
// intervals intersect (an execution without an end lasts forever).
func overlapping(execs []stepExecution) [][2]stepExecution {
	var out [][2]stepExecution
	for i := range execs {
		for j := i + 1; j < len(execs); j++ {
			a, b := execs[i], execs[j]
			aEnd, bEnd := a.End, b.End
			if (aEnd.IsZero() || b.Start.Before(aEnd)) && (bEnd.IsZero() || a.Start.Before(bEnd)) {
				out = append(out, [2]stepExecution{a, b})
			}
		}
	}
	return out
}

// readyPIDs returns the pids that logged they were ready.
func readyPIDs(events []logEvent) map[int]bool {
	pids := map[int]bool{}
	for _, ev := range events {
		if ev.Kind == eventReady {
			pids[ev.PID] = true
		}
	}
	return pids
}
