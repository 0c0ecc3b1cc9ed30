package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
	"github.com/openworkflow-go/openworkflow/server"
)

// The server process of the crash test is this test binary, re-executed
// with serverEnv set to a JSON serverConfig.
const serverEnv = "OW_TEST_SERVER_PROCESS"

type serverConfig struct {
	Kind, DSN, Schema string // "sqlite" (DSN: the file) or "postgres" (DSN: the URL)
	Addr              string // where to listen
	AckFile           string // where the stream writer notes each chunk it wrote
}

func TestMain(m *testing.M) {
	if cfg := os.Getenv(serverEnv); cfg != "" {
		os.Exit(serverProcess(cfg))
	}
	os.Exit(m.Run())
}

func openTarget(ctx context.Context, cfg serverConfig) (backend.Backend, error) {
	if cfg.Kind == "sqlite" {
		return sqlite.Open(ctx, cfg.DSN, sqlite.Options{})
	}
	return postgres.Open(ctx, cfg.DSN, postgres.Options{Schema: cfg.Schema})
}

// crashWorkflows are the server process's workflows: "collector" creates
// hook "crash-hook" and receives payloads until one says stop; "writer"
// runs one step that writes chunks to stream "out" forever, noting in the
// ack file each chunk whose write returned.
func crashWorkflows(ackFile string) []ow.Definition {
	collector := ow.Define(ow.Spec{Name: "collector"}, func(ctx ow.Context, _ struct{}) (int, error) {
		h, err := ow.CreateHook[map[string]any](ctx, "collect", ow.WithToken("crash-hook"))
		if err != nil {
			return 0, err
		}
		for n := 0; ; n++ {
			v, ok, err := h.Receive(ow.WithTimeout(time.Hour))
			if err != nil || !ok {
				return n, err
			}
			if v["stop"] == true {
				return n, nil
			}
		}
	})
	writer := ow.Define(ow.Spec{Name: "writer"}, func(ctx ow.Context, _ struct{}) (int, error) {
		return ow.Run(ctx, "write", func(sctx context.Context) (int, error) {
			acks, err := os.OpenFile(ackFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
			if err != nil {
				return 0, err
			}
			defer acks.Close()
			w, err := ow.OpenStream(sctx, "out")
			if err != nil {
				return 0, err
			}
			for i := 0; ; i++ {
				if _, err := fmt.Fprintf(w, "chunk-%d", i); err != nil {
					return i, err
				}
				// The write returned: the chunk is committed. Note it
				// (unbuffered: a kill -9 keeps what the kernel has).
				if _, err := fmt.Fprintf(acks, "%d\n", i); err != nil {
					return i, err
				}
			}
		})
	})
	return []ow.Definition{collector, writer}
}

// serverProcess is the body of the re-executed server process.
func serverProcess(raw string) int {
	var cfg serverConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	b, err := openTarget(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	w := ow.NewWorker(b, ow.WorkerOptions{})
	if err := w.Register(crashWorkflows(cfg.AckFile)...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	err = server.Serve(ctx, ow.NewClient(b), server.Options{Addr: cfg.Addr, Worker: w})
	fmt.Fprintln(os.Stderr, "serve:", err)
	return 1
}

// TestKillDuringHookPayloadsAndStreamChunks kills the server process with
// SIGKILL while clients deliver hook payloads to it and its worker writes
// stream chunks. Nothing acknowledged is lost: every payload answered
// with a 2xx, and every chunk whose write returned, is stored; and nothing
// is stored twice or that was not sent.
func TestKillDuringHookPayloadsAndStreamChunks(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			cfg := serverConfig{Kind: kind, AckFile: filepath.Join(t.TempDir(), "acks")}
			if kind == "sqlite" {
				cfg.DSN = filepath.Join(t.TempDir(), "ow.db")
			} else {
				cfg.DSN, cfg.Schema = pgtest.URL(), pgtest.NewSchema(t)
			}
			testKill(t, cfg)
		})
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func testKill(t *testing.T, cfg serverConfig) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The parent opens (and migrates) the backend first.
	b, err := openTarget(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := ow.NewClient(b)
	cfg.Addr = freeAddr(t)
	raw, _ := json.Marshal(cfg)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serverEnv+"="+string(raw))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() {
			t.Logf("server process output:\n%s", out.String())
		}
	}()
	base := "http://" + cfg.Addr
	client := &http.Client{Timeout: 10 * time.Second}
	waitFor(t, ctx, "the server", func() bool {
		res, err := client.Get(base + "/healthz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	})
	post := func(path, body string) (int, []byte, error) {
		res, err := client.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return res.StatusCode, b, err
	}
	var collector, writer struct{ ID string }
	for _, s := range []struct {
		wf  string
		dst *struct{ ID string }
	}{{"collector", &collector}, {"writer", &writer}} {
		code, body, err := post("/v1/runs", `{"workflowName":"`+s.wf+`"}`)
		if err != nil || code != http.StatusCreated {
			t.Fatalf("start %s: %d %s %v", s.wf, code, body, err)
		}
		_ = json.Unmarshal(body, s.dst)
	}
	waitFor(t, ctx, "the hook", func() bool {
		res, err := client.Get(base + "/v1/hooks/crash-hook")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	})

	// Four clients deliver payloads until the server dies; each notes the
	// payloads answered with a 2xx, and those sent at all.
	var mu sync.Mutex
	acked, sent := map[string]bool{}, map[string]bool{}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("%d-%d", g, i)
				mu.Lock()
				sent[key] = true
				mu.Unlock()
				code, _, err := post("/v1/hooks/crash-hook", `{"key":"`+key+`"}`)
				if err != nil {
					return // the server is gone: this payload's fate is unknown
				}
				if code/100 == 2 {
					mu.Lock()
					acked[key] = true
					mu.Unlock()
				}
			}
		}()
	}
	// Kill once both kinds of writes are under way.
	waitFor(t, ctx, "payloads and chunks to be written", func() bool {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		return n >= 50 && len(readAcks(t, cfg.AckFile)) >= 50
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true
	close(stop)
	wg.Wait()

	// Hook payloads: read them all back.
	hs := b.(backend.HookStore)
	hook, err := hs.GetHookByToken(ctx, "crash-hook")
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for seq := int64(0); ; {
		p, ok, err := hs.NextHookPayload(ctx, hook.ID, seq)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if p.Seq != seq+1 {
			t.Errorf("payload %d follows %d: a gap", p.Seq, seq)
		}
		seq = p.Seq
		var v struct{ Key string }
		if err := json.Unmarshal(p.Data, &v); err != nil {
			t.Fatalf("payload %d: %s", p.Seq, p.Data)
		}
		if stored[v.Key] {
			t.Errorf("payload %s stored twice", v.Key)
		}
		if !sent[v.Key] {
			t.Errorf("payload %s stored but never sent", v.Key)
		}
		stored[v.Key] = true
	}
	for k := range acked {
		if !stored[k] {
			t.Errorf("payload %s was answered 2xx but is not stored", k)
		}
	}
	// Stream chunks: every chunk the writer saw committed is there, in
	// order, with its bytes (the run is still leased to the dead worker,
	// so its chunks are shown).
	acks := readAcks(t, cfg.AckFile)
	chunks, _, err := c.ReadStream(ctx, backend.ReadStreamParams{WorkflowRunID: writer.ID, Stream: "out", Limit: backend.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	var all []backend.StreamChunk
	for {
		all = append(all, chunks...)
		if len(chunks) < backend.MaxPageSize {
			break
		}
		if chunks, _, err = c.ReadStream(ctx, backend.ReadStreamParams{WorkflowRunID: writer.ID, Stream: "out", AfterSeq: all[len(all)-1].Seq, Limit: backend.MaxPageSize}); err != nil {
			t.Fatal(err)
		}
	}
	if len(all) < len(acks) || len(all) > len(acks)+1 {
		t.Errorf("%d chunks stored, %d acknowledged: want all of them, and at most the one in flight more", len(all), len(acks))
	}
	for i, ch := range all {
		if want := fmt.Sprintf("chunk-%d", i); string(ch.Data) != want || ch.Seq != int64(i+1) {
			t.Errorf("chunk %d: seq %d %q, want seq %d %q", i, ch.Seq, ch.Data, i+1, want)
			break
		}
	}
	t.Logf("%s: %d payloads acknowledged, %d stored; %d chunks acknowledged, %d stored", cfg.Kind, len(acked), len(stored), len(acks), len(all))
}

// readAcks returns the chunk numbers the writer noted.
func readAcks(t *testing.T, path string) []int {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var n []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		i, err := strconv.Atoi(sc.Text())
		if err != nil {
			break // a line cut by the kill
		}
		n = append(n, i)
	}
	return n
}

func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waited too long for %s", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
