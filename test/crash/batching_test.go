package crash

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// appenderEnv turns the test binary into a batch appender process; its
// value is the JSON of an appenderConfig.
const appenderEnv = "OW_CRASHTEST_APPENDER"

// appenderConfig is what an appender process is told.
type appenderConfig struct {
	Backend, DSN, Schema, Namespace string
	// AckLog is the file each acknowledged item is appended to, one line
	// per item, after AppendBatchItem returned nil.
	AckLog string
	// Appenders is the number of goroutines appending at once.
	Appenders int
}

const batchCrashWorkflow = "batch-crash"

// batchCrashOptions flush often by size (every 7 items) and by timeout
// (1 s, flushed by the process's own flusher), so that kills land in the
// middle of appends and of flushes of both kinds.
var batchCrashOptions = backend.BatchOptions{MaxSize: 7, Timeout: time.Second}

// TestBatchAppenderProcess is the appender process of
// TestBatchingKilledNeverLosesOrDuplicatesItems.
func TestBatchAppenderProcess(t *testing.T) {
	raw := os.Getenv(appenderEnv)
	if raw == "" {
		t.Skip("runs only as an appender process started by TestBatchingKilledNeverLosesOrDuplicatesItems")
	}
	var cfg appenderConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	ctx, orphaned := context.WithCancelCause(context.Background())
	defer orphaned(nil)
	go stopWhenOrphaned(ctx, orphaned)
	b, err := openBackend(ctx, cfg.Backend, cfg.DSN, cfg.Schema, cfg.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	bs := b.(backend.BatchStore)
	ack, err := os.OpenFile(cfg.AckLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // one write per line
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the timer flush, as a worker's batch loop
		defer wg.Done()
		for ctx.Err() == nil {
			if _, _, _, err := bs.FlushDueBatches(ctx, 0); err != nil && ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "flush:", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	for g := range cfg.Appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				item := fmt.Sprintf("%d-%d-%d", os.Getpid(), g, i)
				raw, _ := json.Marshal(item)
				// Keys partition the items: three keys, so the batches of
				// one key are flushed while the others fill.
				_, err := bs.AppendBatchItem(ctx, backend.AppendBatchItemParams{
					WorkflowName: batchCrashWorkflow, Key: fmt.Sprint(i % 3), Item: raw, Options: batchCrashOptions,
				})
				if err != nil {
					fmt.Fprintln(os.Stderr, "append:", err)
					continue
				}
				mu.Lock()
				_, err = ack.WriteString(item + "\n")
				mu.Unlock()
				if err != nil {
					fmt.Fprintln(os.Stderr, "ack:", err)
				}
			}
		}()
	}
	wg.Wait()
}

// Batching killed: appender processes (three goroutines each, appending
// to three keys of one batched workflow, flushing by size and by a
// timer) are killed with SIGKILL one after another in the middle of their
// appends and flushes; the test then flushes what is left and requires
// every acknowledged item to be in exactly one run's input, and no item
// (acknowledged or caught in flight by the kill) to be in two.
func TestBatchingKilledNeverLosesOrDuplicatesItems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		target func(*testing.T) target
	}{
		{"sqlite", sqliteTarget},
		{"postgres", postgresTarget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testBatchingKilled(t, tc.target(t))
		})
	}
}

func testBatchingKilled(t *testing.T, tg target) {
	c := tg.open(t) // creates and migrates the database first
	ctx := t.Context()
	ackLog := filepath.Join(t.TempDir(), "acks.log")
	acked := func() []string {
		data, err := os.ReadFile(ackLog)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		return lines[:len(lines)-1] // the last line is empty or cut by the kill
	}
	cfg := appenderConfig{Backend: tg.kind, DSN: tg.dsn, Schema: tg.schema, Namespace: tg.namespace, AckLog: ackLog, Appenders: 3}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		before := len(acked())
		cmd := exec.Command(os.Args[0], "-test.run=^TestBatchAppenderProcess$", "-test.count=1", "-test.timeout=5m")
		cmd.Env = append(os.Environ(), appenderEnv+"="+string(raw))
		out, err := os.Create(filepath.Join(t.TempDir(), fmt.Sprintf("appender-%d.out", round)))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		waitFor(t, 2*time.Minute, fmt.Sprintf("appender process %d to acknowledge 150 items", cmd.Process.Pid), func() (bool, error) {
			select {
			case <-done:
				data, _ := os.ReadFile(out.Name())
				return false, fmt.Errorf("appender process exited early:\n%s", data)
			default:
			}
			return len(acked()) >= before+150, nil
		})
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("appender process %d still running 30 s after SIGKILL", cmd.Process.Pid)
		}
		out.Close()
		t.Logf("killed appender process %d after %d acknowledged items", cmd.Process.Pid, len(acked())-before)
	}

	// Flush what the kills left open, on a clock past every timeout.
	later, err := openBackendOn(ctx, tg.kind, tg.dsn, tg.schema, tg.namespace, func() time.Time { return time.Now().Add(time.Hour) })
	if err != nil {
		t.Fatal(err)
	}
	defer later.Close()
	if _, _, open, err := later.(backend.BatchStore).FlushDueBatches(ctx, 1000); err != nil || open {
		t.Fatalf("final flush: open batches left %v, %v", open, err)
	}

	inRuns := map[string]int{}
	runs := 0
	after := ""
	for {
		page, err := c.ListRuns(ctx, backend.ListWorkflowRunsParams{WorkflowName: batchCrashWorkflow, Limit: 500, After: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Data {
			var items []string
			if err := json.Unmarshal(r.Input, &items); err != nil {
				t.Fatalf("run %s input %s: %v", r.ID, r.Input, err)
			}
			if len(items) == 0 || len(items) > batchCrashOptions.MaxSize {
				t.Fatalf("run %s has %d items, want 1 to %d", r.ID, len(items), batchCrashOptions.MaxSize)
			}
			for _, it := range items {
				inRuns[it]++
			}
			runs++
		}
		if page.Next == nil {
			break
		}
		after = *page.Next
	}
	for it, n := range inRuns {
		if n != 1 {
			t.Fatalf("item %s is in %d runs' inputs, want 1", it, n)
		}
	}
	acks := acked()
	for _, it := range acks {
		if inRuns[it] != 1 {
			t.Fatalf("acknowledged item %s is in %d runs' inputs, want 1", it, inRuns[it])
		}
	}
	t.Logf("%d acknowledged items (%d stored in all) in exactly one of %d runs each", len(acks), len(inRuns), runs)
}
