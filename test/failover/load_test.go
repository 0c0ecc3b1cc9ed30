package failover

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
)

// roleEnv turns the test binary into a worker or client process of the
// load; its value is the JSON of a processConfig.
const roleEnv = "OW_FAILOVER_ROLE"

// processConfig is what the test tells a process it starts.
type processConfig struct {
	Role   string `json:"role"` // "worker" or "client"
	URL    string `json:"url"`  // the multi-host URL
	Schema string `json:"schema"`
	// AckLog is the file the process appends its acknowledged writes and
	// its step executions to, one JSON record a line.
	AckLog string `json:"ackLog"`
	// Worker options (role worker).
	Lease       time.Duration `json:"lease"`
	Heartbeat   time.Duration `json:"heartbeat"`
	MaxPoll     time.Duration `json:"maxPoll"`
	Concurrency int           `json:"concurrency"`
	// StartEvery is the client's pace (role client).
	StartEvery time.Duration `json:"startEvery"`
}

// record is one line of an ack log. Kind is:
//   - "start": the client's start of run Run (input I) returned;
//   - "hook": the client's delivery of payload I to run I's hook returned
//     (Seq, its number);
//   - "schedule": the client's PutSchedule returned;
//   - "exec": a worker began executing step Step of Run, as execution
//     Nonce (a step's output is the nonce of the execution recorded);
//   - "chunk": a worker's append of chunk Seq ("nonce/seq") returned;
//   - "ack": the result of step Step (Nonce) was read back from the
//     run's history, so it was durable (logged on a replay after the
//     run's sleep).
type record struct {
	Kind  string `json:"k"`
	Run   string `json:"run,omitempty"`
	Step  string `json:"step,omitempty"`
	Nonce string `json:"nonce,omitempty"`
	I     int    `json:"i,omitempty"`
	Seq   int64  `json:"seq,omitempty"`
	At    int64  `json:"at"` // unix ns
}

// ackLog appends records to a file; safe for concurrent use.
type ackLog struct {
	mu sync.Mutex
	f  *os.File
}

func openAckLog(path string) (*ackLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &ackLog{f: f}, nil
}

func (l *ackLog) add(r record) {
	r.At = time.Now().UnixNano()
	line, _ := json.Marshal(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.f.Write(append(line, '\n'))
}

func (l *ackLog) close() error { return l.f.Close() }

// loadInput is the input of a load run; Token is its hook's token.
type loadInput struct {
	I     int    `json:"i"`
	Token string `json:"token"`
}

// loadOutput is what a load run returns: the nonces of its two steps'
// recorded executions and the hook payload it received.
type loadOutput struct {
	A    string `json:"a"`
	B    string `json:"b"`
	Hook int    `json:"hook"`
}

// hookPayload is what the client delivers to a run's hook.
type hookPayload struct {
	I int `json:"i"`
}

// chunksPerStep is how many chunks step "a" appends to stream "out".
const chunksPerStep = 3

func nonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// loadWorkflow is the load: a step writing stream chunks (one run in five
// holding its step 2 s, so heartbeats run during the outage), a 1 s
// durable sleep, a hook created with the client's token and waited on,
// and a second step.
func loadWorkflow(log *ackLog) *ow.Workflow[loadInput, loadOutput] {
	return ow.Define(ow.Spec{Name: "failover-load"}, func(ctx ow.Context, in loadInput) (loadOutput, error) {
		run := ctx.RunInfo().ID
		a, err := ow.Run(ctx, "a", func(c context.Context) (string, error) {
			n := nonce()
			log.add(record{Kind: "exec", Run: run, Step: "a", Nonce: n})
			w, err := ow.OpenStream(c, "out")
			if err != nil {
				return "", err
			}
			for k := range chunksPerStep {
				if _, err := w.WriteString(fmt.Sprintf("%s/%d", n, k)); err != nil {
					return "", err
				}
				log.add(record{Kind: "chunk", Run: run, Nonce: n, Seq: int64(k)})
			}
			if in.I%5 == 0 {
				select {
				case <-time.After(2 * time.Second):
				case <-c.Done():
					return "", c.Err()
				}
			}
			return n, nil
		})
		if err != nil {
			return loadOutput{}, err
		}
		if err := ow.Sleep(ctx, "nap", time.Second); err != nil {
			return loadOutput{}, err
		}
		// Past a durable sleep, a's result came from the history.
		log.add(record{Kind: "ack", Run: run, Step: "a", Nonce: a})
		h, err := ow.CreateHook[hookPayload](ctx, "h", ow.WithToken(in.Token))
		if err != nil {
			return loadOutput{}, err
		}
		p, ok, err := h.Receive(ow.WithTimeout(5 * time.Minute))
		if err != nil {
			return loadOutput{}, err
		}
		if !ok {
			return loadOutput{}, errors.New("no hook payload within 5 minutes")
		}
		b, err := ow.Run(ctx, "b", func(context.Context) (string, error) {
			n := nonce()
			log.add(record{Kind: "exec", Run: run, Step: "b", Nonce: n})
			return n, nil
		})
		if err != nil {
			return loadOutput{}, err
		}
		return loadOutput{A: a, B: b, Hook: p.I}, nil
	})
}

// tickWorkflow is what the schedule starts: one step.
func tickWorkflow(log *ackLog) *ow.Workflow[struct{}, string] {
	return ow.Define(ow.Spec{Name: "failover-tick"}, func(ctx ow.Context, _ struct{}) (string, error) {
		run := ctx.RunInfo().ID
		return ow.Run(ctx, "t", func(context.Context) (string, error) {
			n := nonce()
			log.add(record{Kind: "exec", Run: run, Step: "t", Nonce: n})
			return n, nil
		})
	})
}

// pingWorkflow is one step; the test measures how fast an idle worker
// picks it up (a NOTIFY, not a poll).
func pingWorkflow(log *ackLog) *ow.Workflow[int, string] {
	return ow.Define(ow.Spec{Name: "failover-ping"}, func(ctx ow.Context, _ int) (string, error) {
		run := ctx.RunInfo().ID
		return ow.Run(ctx, "p", func(context.Context) (string, error) {
			n := nonce()
			log.add(record{Kind: "exec", Run: run, Step: "p", Nonce: n})
			return n, nil
		})
	})
}

// scheduleName is the load's schedule.
const scheduleName = "failover-every-second"

func hookToken(schema string, i int) string { return fmt.Sprintf("%s-hook-%d", schema, i) }

// runProcess is the body of a worker or client process: it runs until
// SIGTERM (or its parent goes away).
func runProcess(cfg processConfig) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx, orphaned := context.WithCancelCause(ctx)
	defer orphaned(nil)
	go stopWhenOrphaned(ctx, orphaned)

	log, err := openAckLog(cfg.AckLog)
	if err != nil {
		return err
	}
	defer log.close()
	b, err := postgres.Open(ctx, cfg.URL, postgres.Options{Schema: cfg.Schema, SkipMigrations: true})
	if err != nil {
		return err
	}
	defer b.Close()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	switch cfg.Role {
	case "worker":
		return runWorker(ctx, cfg, b, log, logger)
	case "client":
		return runClient(ctx, cfg, b, log, logger)
	}
	return fmt.Errorf("unknown role %q", cfg.Role)
}

func runWorker(ctx context.Context, cfg processConfig, b backend.Backend, log *ackLog, logger *slog.Logger) error {
	w := ow.NewWorker(b, ow.WorkerOptions{
		Concurrency:       cfg.Concurrency,
		LeaseDuration:     cfg.Lease,
		HeartbeatInterval: cfg.Heartbeat,
		MaxPollInterval:   cfg.MaxPoll,
		Logger:            logger,
		ID:                fmt.Sprintf("failover-%d", os.Getpid()),
	})
	if err := w.Register(loadWorkflow(log), tickWorkflow(log), pingWorkflow(log)); err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return w.Stop(stopCtx)
}

// runClient puts the schedule, then starts a load run every StartEvery
// (each with an idempotency key, retried until acknowledged) and delivers
// each run's hook payload (retried until acknowledged: the hook may not
// exist yet) until SIGTERM; then it finishes delivering the payloads of
// the runs it started, and returns.
func runClient(ctx context.Context, cfg processConfig, b backend.Backend, log *ackLog, logger *slog.Logger) error {
	client := ow.NewClient(b)
	retry := func(what string, f func(context.Context) error) bool {
		for attempt := 0; ; attempt++ {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
			err := f(cctx)
			cancel()
			if err == nil {
				return true
			}
			if attempt%20 == 0 {
				logger.Info("failover client: retrying", "what", what, "error", err)
			}
			if ctx.Err() != nil && (what == "start" || what == "schedule") {
				return false
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !retry("schedule", func(c context.Context) error {
		_, err := client.PutSchedule(c, ow.ScheduleSpec{
			Name: scheduleName, Workflow: "failover-tick", Cron: "@every 1s", Overlap: ow.OverlapAllowAll,
		})
		return err
	}) {
		return ctx.Err()
	}
	log.add(record{Kind: "schedule"})
	wf := loadWorkflow(log)
	var hooks sync.WaitGroup
	tick := time.NewTicker(cfg.StartEvery)
	defer tick.Stop()
	for i := 1; ctx.Err() == nil; i++ {
		in := loadInput{I: i, Token: hookToken(cfg.Schema, i)}
		var runID string
		if !retry("start", func(c context.Context) error {
			h, err := wf.Start(c, client, in, ow.WithIdempotencyKey(fmt.Sprintf("load-%d", i)))
			if err == nil {
				runID = h.ID
			}
			return err
		}) {
			break
		}
		log.add(record{Kind: "start", Run: runID, I: i})
		hooks.Add(1)
		go func() {
			defer hooks.Done()
			// Deliver once the run waits (or soon before): a payload is kept
			// until received, but the hook must exist.
			retry("hook", func(c context.Context) error {
				_, p, err := client.ResumeHook(c, in.Token, hookPayload{I: in.I})
				if err == nil {
					log.add(record{Kind: "hook", Run: runID, I: in.I, Seq: p.Seq})
				}
				if errors.Is(err, ow.ErrHookNotFound) {
					// Not created yet, or the run ended without it (a
					// failure the test reports): give up on an ended run.
					if r, gerr := b.GetWorkflowRun(c, runID); gerr == nil && r.Status.Terminal() {
						logger.Error("failover client: the run ended before its hook got a payload", "run", runID, "status", r.Status)
						return nil
					}
				}
				return err
			})
		}()
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
	hooks.Wait()
	return nil
}

// stopWhenOrphaned ends ctx when the process that started this one is
// gone, so a test binary that died leaves no process behind.
func stopWhenOrphaned(ctx context.Context, stop context.CancelCauseFunc) {
	parent := os.Getppid()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if os.Getppid() != parent {
				stop(errors.New("parent process exited"))
				return
			}
		}
	}
}
