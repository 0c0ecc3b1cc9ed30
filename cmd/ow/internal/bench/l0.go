package bench

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// l0Script is the pgbench transaction of L0.
//
//go:embed l0.sql
var l0Script string

// l0Schema is L0's tables: a run row per id, and the step rows inserted.
const l0Schema = `
CREATE TABLE l0_runs (
  id integer PRIMARY KEY,
  status text NOT NULL DEFAULT 'running',
  attempts integer NOT NULL DEFAULT 0,
  updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO l0_runs (id) SELECT generate_series(1, 10000);
CREATE TABLE l0_steps (
  id bigserial PRIMARY KEY,
  run_id integer NOT NULL,
  output jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ON l0_steps (run_id);`

var tpsLine = regexp.MustCompile(`(?m)^tps = ([0-9.]+)`)

// runL0 measures L0 with pgbench on a fresh database, once per client
// count: the transactions per second of the minimum durable writes of a
// step, an upper bound on steps/s for one-commit-per-step designs.
func runL0(ctx context.Context, o Options, admin *pgAdmin, bk string) ([]Result, error) {
	if bk != Postgres {
		return []Result{{Engine: EngineGo, Workload: L0, Backend: bk, Skipped: "L0 is PostgreSQL's limit (pgbench)"}}, nil
	}
	pgbench, err := exec.LookPath("pgbench")
	if err != nil {
		return []Result{{Engine: EngineGo, Workload: L0, Backend: bk, Error: "pgbench not found on PATH (it comes with the PostgreSQL client)"}}, nil
	}
	name, err := admin.createDB(ctx, dbPrefix+"l0_")
	if err != nil {
		return nil, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		_ = admin.dropDB(cctx, name)
	}()
	url := admin.dbURL(name)
	if err := execSQL(ctx, url, l0Schema); err != nil {
		return nil, fmt.Errorf("L0 schema: %w", err)
	}
	dir, err := os.MkdirTemp(o.TempDir, "ow-bench-l0-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "l0.sql")
	if err := os.WriteFile(script, []byte(l0Script), 0o644); err != nil {
		return nil, err
	}
	var out []Result
	for _, clients := range o.L0Clients {
		secs := max(1, int(o.L0Duration.Round(time.Second)/time.Second))
		fmt.Fprintf(o.Progress, "L0 postgres: pgbench, %d clients, %d s\n", clients, secs)
		cmd := exec.CommandContext(ctx, pgbench, "-n", "-M", "prepared", "-f", script,
			"-c", strconv.Itoa(clients), "-j", strconv.Itoa(min(clients, 2)), "-T", strconv.Itoa(secs), url)
		b, err := cmd.CombinedOutput()
		res := Result{Engine: EngineGo, Workload: L0, Backend: Postgres, Concurrency: clients, Repeat: 1, Metrics: map[string]float64{}}
		m := tpsLine.FindSubmatch(b)
		if err != nil || m == nil {
			return out, errors.Join(fmt.Errorf("pgbench with %d clients: %v\n%s", clients, err, b), ctx.Err())
		}
		tps, _ := strconv.ParseFloat(string(m[1]), 64)
		res.Metrics[MetricTPS] = tps
		res.Metrics[MetricSeconds] = float64(secs)
		fmt.Fprintf(o.Progress, "L0 postgres, %d clients: %.0f tps\n", clients, tps)
		out = append(out, res)
	}
	return out, nil
}

// execSQL runs sql (several statements) on the database at url.
func execSQL(ctx context.Context, url, sql string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}
