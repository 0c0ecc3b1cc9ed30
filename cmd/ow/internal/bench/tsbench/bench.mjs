// bench.mjs runs the standard workloads (shared/bench/WORKLOADS.md) on the
// TypeScript OpenWorkflow, as `ow bench --compare-openworkflow-ts` does on
// the Go engine: the same workflows (names, steps, inputs, outputs), the
// same run counts, worker concurrency and repetitions, a fresh database
// per measurement (a PostgreSQL database, or a SQLite file under --tmp),
// and every run's output verified. It prints one JSON line per
// measurement on stdout (the fields of ow bench --json) and progress on
// stderr.
//
// The SQLite variants use the TypeScript OpenWorkflow's own backend
// (openworkflow/sqlite, BackendSqlite on node:sqlite: Node 22.13 or later,
// or 22.5 with --experimental-sqlite). It opens every file database in
// WAL mode and leaves synchronous at SQLite's default, FULL, as the Go
// backend does; its busy timeout is SQLite's default, 0, which it offers
// no option to change, so W5 runs on SQLite with one worker process only
// (see w5SQLiteSkip). Its calls are synchronous: each blocks the event
// loop, fsync included.
//
// `ow bench` installs openworkflow@0.10, postgres@3 and
// @opentelemetry/api@1 beside this file (package.json) and runs:
//
//   node bench.mjs --admin-url URL --db-prefix P --workloads W0,W1,...
//     --runs '{"W1":5000,...}' --concurrency 100 --repeat 1
//     --backends postgres,sqlite --tmp DIR [--sqlite-unavailable WHY]
//
// When the node on PATH lacks node:sqlite, ow bench runs the SQLite
// backend in a second invocation on Node 22 installed from npm
// (ts.go); if it cannot, --sqlite-unavailable says why, appended to the
// reason the SQLite workloads are skipped.
//
// `node bench.mjs worker --backend postgres|sqlite --url URL-or-file
// --concurrency N` is a W5 worker process: it prints "ready", starts its
// worker on the line "go", and stops on SIGTERM or when stdin closes.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { OpenWorkflow } from "openworkflow";
import { BackendPostgres } from "openworkflow/postgres";
import postgres from "postgres";

const NAMESPACE = "bench";
const SCHEMA = "openworkflow";
const FAN_OUT = 10;
const SLEEP_MS = 2000;
const POLL_MS = 250; // as pollInterval in measure.go
const STALL_MS = 60_000;
const PROGRESS_MS = 2000;
const W5_WORKERS = [1, 2, 4];

const { values: opt, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    "admin-url": { type: "string", default: "" },
    "db-prefix": { type: "string", default: "ow_bench_ts_" },
    workloads: { type: "string", default: "W0,W1,W2,W3,W4,W5" },
    runs: { type: "string", default: "{}" },
    concurrency: { type: "string", default: "100" },
    repeat: { type: "string", default: "1" },
    backends: { type: "string", default: "postgres" },
    tmp: { type: "string", default: "" },
    "sqlite-unavailable": { type: "string", default: "" },
    backend: { type: "string", default: "postgres" },
    url: { type: "string", default: "" },
  },
});
const concurrency = Number(opt.concurrency);

// ---- the bench workflows (as cmd/ow/internal/bench/workflows.go) ----

function expected(i, n) {
  return { i, sum: n * i + (n * (n - 1)) / 2 };
}

async function sequence(step, input, n) {
  let sum = 0;
  for (let k = 0; k < n; k++) {
    const r = await step.run({ name: `step-${k}` }, () => ({ i: input.i, k }));
    sum += r.i + r.k;
  }
  return { i: input.i, sum };
}

function defineWorkflows(ow) {
  return {
    one: ow.defineWorkflow({ name: "bench-one" }, ({ input, step }) => sequence(step, input, 1)),
    seq3: ow.defineWorkflow({ name: "bench-seq3" }, ({ input, step }) => sequence(step, input, 3)),
    fanout: ow.defineWorkflow({ name: "bench-fanout" }, async ({ input, step }) => {
      const rs = await Promise.all(
        Array.from({ length: FAN_OUT }, (_, k) => step.run({ name: `branch-${k}` }, () => ({ i: input.i, k }))),
      );
      let sum = rs.reduce((s, r) => s + r.i + r.k, 0);
      const f = await step.run({ name: "final" }, () => ({ i: input.i, k: FAN_OUT }));
      sum += f.i + f.k;
      return { i: input.i, sum };
    }),
    sleep: ow.defineWorkflow({ name: "bench-sleep" }, async ({ input, step }) => {
      await step.sleep("sleep", `${SLEEP_MS}ms`);
      return sequence(step, input, 1);
    }),
  };
}

// connect opens a backend of kind "postgres" (url a database URL) or
// "sqlite" (url a file) on the bench namespace.
async function connect(kind, url, runMigrations) {
  let backend;
  if (kind === "sqlite") {
    const { BackendSqlite } = await import("openworkflow/sqlite"); // not on Node 20
    backend = BackendSqlite.connect(url, { namespaceId: NAMESPACE, runMigrations });
  } else {
    backend = await BackendPostgres.connect(url, { namespaceId: NAMESPACE, runMigrations });
  }
  const ow = new OpenWorkflow({ backend });
  return { backend, ow, wf: defineWorkflows(ow) };
}

// ---- helpers ----

const now = () => performance.timeOrigin + performance.now(); // ms, wall clock
const log = (s) => process.stderr.write(s + "\n");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const fmt = (n) => n.toLocaleString("en-US");

function percentile(vs, p) {
  if (vs.length === 0) return 0;
  const s = [...vs].sort((a, b) => a - b);
  const i = Math.ceil((p / 100) * s.length) - 1;
  return s[Math.min(Math.max(i, 0), s.length - 1)];
}

function progress(label) {
  let last = now();
  return (done, total, what) => {
    if (now() - last < PROGRESS_MS) return;
    last = now();
    log(`TS ${label}: ${fmt(done)}/${fmt(total)} ${what}`);
  };
}

// Things to undo if the bench is interrupted (SIGTERM from ow bench).
const cleanups = new Set();
let stopping = false;
process.on("SIGTERM", () => interrupt("SIGTERM"));
process.on("SIGINT", () => interrupt("SIGINT"));
async function interrupt(sig) {
  if (stopping) return;
  stopping = true;
  log(`TS bench: ${sig}, cleaning up`);
  for (const f of [...cleanups].reverse()) {
    try {
      await f();
    } catch (e) {
      log(`TS bench: cleanup: ${e.message}`);
    }
  }
  process.exit(130);
}

// ---- databases ----

let admin;
let dbCounter = 0;

function dbURL(name) {
  const u = new URL(opt["admin-url"]);
  u.pathname = "/" + name;
  return u.toString();
}

// A target is the fresh database one measurement runs on:
//   kind      "postgres" or "sqlite"
//   url       the database URL or file a backend (or W5 worker) opens
//   connect() a backend, client and workflows on it
//   counter() the run counter the bench polls
//   listRuns() every run of the namespace (see pgListRuns)
//   commits() the database's committed transactions once every session
//             has ended, or null where there is no such count (SQLite)

// withTarget runs fn on a fresh, migrated database of kind, dropped after.
async function withTarget(kind, fn) {
  return kind === "sqlite" ? withSQLiteFile(fn) : withDatabase(fn);
}

async function withDatabase(fn) {
  const name = `${opt["db-prefix"]}${dbCounter++}_${randomBytes(3).toString("hex")}`;
  await admin.unsafe(`CREATE DATABASE "${name}"`);
  const drop = () => admin.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  cleanups.add(drop);
  try {
    const url = dbURL(name);
    const { backend } = await connect("postgres", url, true); // migrate
    await backend.stop();
    return await fn({
      kind: "postgres",
      url,
      connect: (migrate = false) => connect("postgres", url, migrate),
      counter: () => pgCounter(url),
      listRuns: () => pgListRuns(url),
      commits: () => xactCommit(name),
    });
  } finally {
    cleanups.delete(drop);
    await drop();
  }
}

// withSQLiteFile is a fresh database file in a directory of its own under
// --tmp (the file, its -wal and -shm), created and migrated by
// BackendSqlite.connect: WAL mode, synchronous FULL.
async function withSQLiteFile(fn) {
  const dir = await mkdtemp(join(opt.tmp, `sqlite-${dbCounter++}-`));
  const drop = () => rm(dir, { recursive: true, force: true });
  cleanups.add(drop);
  try {
    const path = join(dir, "bench.db");
    const { backend } = await connect("sqlite", path, true); // create and migrate
    await backend.stop();
    return await fn({
      kind: "sqlite",
      url: path,
      connect: (migrate = false) => connect("sqlite", path, migrate),
      counter: () => backendCounter("sqlite", path),
      listRuns: () => sqliteListRuns(path),
      commits: async () => null,
    });
  } finally {
    cleanups.delete(drop);
    await drop();
  }
}

// xactCommit waits until no session is connected to the database and its
// commit count is stable (sessions report statistics when they end).
async function xactCommit(name) {
  const deadline = now() + 15_000;
  let last = -1;
  let stable = 0;
  for (;;) {
    await admin`SELECT pg_stat_clear_snapshot()`;
    const [row] = await admin`SELECT
      (SELECT count(*) FROM pg_stat_activity WHERE datname = ${name})::int AS sessions,
      (SELECT coalesce(sum(xact_commit), 0) FROM pg_stat_database WHERE datname = ${name})::bigint AS commits`;
    const n = Number(row.commits);
    stable = row.sessions === 0 && n === last ? stable + 1 : 0;
    if (stable >= 3) return n;
    last = n;
    if (now() > deadline) throw new Error(`database ${name}: ${row.sessions} sessions still connected`);
    await sleep(20);
  }
}

// pgCounter counts runs per status with one simple-protocol query (exactly
// one transaction) per call, so its commits can be subtracted.
function pgCounter(url) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const q = `SELECT status, count(*)::int AS n FROM "${SCHEMA}".workflow_runs WHERE namespace_id = '${NAMESPACE}' GROUP BY status`;
  let calls = 0;
  return {
    async count() {
      calls++;
      const c = { pending: 0, running: 0, completed: 0, failed: 0, canceled: 0 };
      for (const r of await sql.unsafe(q).simple()) {
        const s = r.status === "succeeded" ? "completed" : r.status === "sleeping" ? "running" : r.status;
        c[s] = (c[s] ?? 0) + r.n;
      }
      return c;
    },
    calls: () => calls,
    close: () => sql.end(),
  };
}

// backendCounter counts runs per status through a backend of its own
// (countWorkflowRuns), as the Go bench does on SQLite.
async function backendCounter(kind, url) {
  const { backend } = await connect(kind, url, false);
  let calls = 0;
  return {
    async count() {
      calls++;
      return backend.countWorkflowRuns(); // succeeded counted as completed, sleeping as running
    },
    calls: () => calls,
    close: () => backend.stop(),
  };
}

async function waitAll(cnt, n, report) {
  let last = -1;
  let lastChange = now();
  for (;;) {
    const c = await cnt.count();
    if (c.failed + c.canceled > 0) {
      throw new Error(`${c.failed} runs failed and ${c.canceled} were canceled (${c.completed}/${n} completed)`);
    }
    if (c.completed >= n) return now();
    if (c.completed !== last) {
      last = c.completed;
      lastChange = now();
    } else if (now() - lastChange > STALL_MS) {
      throw new Error(`no run completed for ${STALL_MS / 1000} s: ${c.completed}/${n} completed, ${c.pending} pending, ${c.running} running`);
    }
    report?.(c.completed, n, "runs");
    await sleep(POLL_MS);
  }
}

// pgListRuns reads every run of the namespace, times in ms since the epoch.
async function pgListRuns(url) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    return await sql.unsafe(`SELECT id, workflow_name, status, input, output, error,
        extract(epoch FROM started_at) * 1000 AS started_ms,
        extract(epoch FROM finished_at) * 1000 AS finished_ms
      FROM "${SCHEMA}".workflow_runs WHERE namespace_id = '${NAMESPACE}'`);
  } finally {
    await sql.end();
  }
}

// sqliteListRuns is pgListRuns on a SQLite file: the backend stores JSON
// as text and times as ISO 8601 text.
async function sqliteListRuns(path) {
  const { DatabaseSync } = await import("node:sqlite");
  const db = new DatabaseSync(path);
  try {
    const json = (v) => (v === null || v === undefined ? null : JSON.parse(v));
    const ms = (v) => (v === null || v === undefined ? null : Date.parse(v));
    return db
      .prepare(`SELECT id, workflow_name, status, input, output, error, started_at, finished_at
        FROM workflow_runs WHERE namespace_id = ?`)
      .all(NAMESPACE)
      .map((r) => ({
        id: r.id,
        workflow_name: r.workflow_name,
        status: r.status,
        input: json(r.input),
        output: json(r.output),
        error: json(r.error),
        started_ms: ms(r.started_at),
        finished_ms: ms(r.finished_at),
      }));
  } finally {
    db.close();
  }
}

// setCommits sets the commit metrics of res from the commit counts before
// and after, less own (the bench's own transactions); nothing when the
// target has no count.
function setCommits(res, before, after, own, steps) {
  if (before === null || after === null) return;
  const commits = after - before - own;
  if (steps > 0) res.commits_per_step = commits / steps;
  res.commits_per_run = commits / res.runs;
}

// verify checks that runs are exactly the n runs of name with inputs
// 0…n−1, each completed with the output of a workflow of `steps` function
// steps.
function verify(runs, name, n, steps) {
  const problems = [];
  const seen = new Array(n).fill(false);
  for (const r of runs) {
    const i = r.input?.i;
    if (r.workflow_name !== name || !Number.isInteger(i) || i < 0 || i >= n) {
      problems.push(`run ${r.id}: unexpected run of ${r.workflow_name} with input ${JSON.stringify(r.input)}`);
      continue;
    }
    if (seen[i]) {
      problems.push(`run ${r.id}: a second run with input ${i}`);
      continue;
    }
    seen[i] = true;
    const status = r.status === "succeeded" ? "completed" : r.status;
    if (status !== "completed") {
      problems.push(`run ${r.id} (input ${i}): status ${r.status}, error ${JSON.stringify(r.error)}`);
      continue;
    }
    const want = expected(i, steps);
    if (r.output?.i !== want.i || r.output?.sum !== want.sum) {
      problems.push(`run ${r.id} (input ${i}): output ${JSON.stringify(r.output)}, want ${JSON.stringify(want)}`);
    }
  }
  seen.forEach((ok, i) => ok || problems.push(`no run with input ${i}`));
  if (problems.length > 0) {
    throw new Error(`output verification failed: ${problems.length} problems among ${runs.length} runs of ${name} (${n} expected): ${problems.slice(0, 5).join("; ")}`);
  }
}

function endOf(runs, begin, seen) {
  const last = Math.max(...runs.map((r) => Number(r.finished_ms ?? 0)));
  return last > begin && last <= seen ? last : seen;
}

async function startAll(wf, n, first = 0) {
  for (let lo = 0; lo < n; lo += 100) {
    const batch = [];
    for (let i = lo; i < Math.min(lo + 100, n); i++) batch.push(wf.run({ i: first + i }));
    await Promise.all(batch);
  }
}

// inProcessWorker starts a worker in this process on a backend of its own.
async function inProcessWorker(t) {
  const { backend, ow } = await t.connect();
  const worker = ow.newWorker({ concurrency });
  await worker.start();
  return async () => {
    await worker.stop();
    await backend.stop();
  };
}

// workerProcesses starts n W5 worker processes, waits until each is
// ready, releases them together and returns their stop function.
async function workerProcesses(t, n) {
  const procs = [];
  const stopAll = async () => {
    await Promise.all(
      procs.map(
        (p) =>
          new Promise((resolve) => {
            if (p.exitCode !== null || p.signalCode !== null) return resolve();
            const t = setTimeout(() => p.kill("SIGKILL"), 40_000);
            p.once("exit", () => {
              clearTimeout(t);
              resolve();
            });
            p.kill("SIGTERM");
          }),
      ),
    );
    const bad = procs.filter((p) => p.exitCode !== 0);
    if (bad.length > 0) throw new Error(`worker processes ended badly: ${bad.map((p) => `${p.pid}: exit ${p.exitCode} ${p.signalCode ?? ""}`).join(", ")}`);
  };
  cleanups.add(stopAll);
  try {
    for (let i = 0; i < n; i++) {
      const args = [...process.execArgv, process.argv[1], "worker", "--backend", t.kind, "--url", t.url, "--concurrency", String(concurrency)];
      const p = spawn(process.execPath, args, {
        stdio: ["pipe", "pipe", "inherit"],
      });
      procs.push(p);
      await new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error("worker process not ready after 60 s")), 60_000);
        const rl = createInterface({ input: p.stdout });
        rl.on("line", (l) => {
          if (l.trim() === "ready") {
            clearTimeout(t);
            resolve();
          }
        });
        p.once("exit", (code) => {
          clearTimeout(t);
          reject(new Error(`worker process exited (${code}) before it was ready`));
        });
      });
    }
  } catch (e) {
    await stopAll().catch(() => {});
    cleanups.delete(stopAll);
    throw e;
  }
  for (const p of procs) p.stdin.write("go\n");
  return async () => {
    try {
      await stopAll();
    } finally {
      cleanups.delete(stopAll);
    }
  };
}

// ---- the workloads ----

function result(workload, backend, runs, steps, workers) {
  const r = { engine: "ts", workload, backend };
  if (workers > 0) r.workers = workers;
  Object.assign(r, { concurrency, runs, steps, repeat: 1 });
  return r;
}

// enqueue is W0: one run started at a time from one client; then, untimed,
// a worker runs them all and every output is verified.
async function w0(t, n, label) {
  const res = result("W0", t.kind, n, 0, 0);
  const before = await t.commits();
  const { backend, wf } = await t.connect();
  const report = progress(label);
  const begin = now();
  for (let i = 0; i < n; i++) {
    await wf.one.run({ i });
    report(i + 1, n, "runs started");
  }
  const secs = (now() - begin) / 1000;
  await backend.stop();
  const after = await t.commits();
  res.starts_per_s = n / secs;
  setCommits(res, before, after, 0, 0);
  res.seconds = secs;
  const cnt = await t.counter();
  const stop = await inProcessWorker(t);
  try {
    await waitAll(cnt, n, progress(label));
  } finally {
    await stop();
    await cnt.close();
  }
  verify(await t.listRuns(), "bench-one", n, 1);
  return res;
}

// throughput is W1, W3 and W5: n runs enqueued before any worker starts,
// timed from the workers' start to the last completion.
async function throughput(t, workload, wfName, steps, n, workers, label) {
  const res = result(workload, t.kind, n, n * steps, workers);
  {
    const { backend, wf } = await t.connect();
    await startAll(wfName === "bench-seq3" ? wf.seq3 : wf.fanout, n);
    await backend.stop();
  }
  const before = await t.commits();
  const cnt = await t.counter();
  let begin = now();
  let stop;
  if (workers > 0) {
    stop = await workerProcesses(t, workers);
    begin = now();
  } else {
    stop = await inProcessWorker(t);
  }
  let seen;
  try {
    seen = await waitAll(cnt, n, progress(label));
  } finally {
    await stop();
    await cnt.close();
  }
  const after = await t.commits();
  const runs = await t.listRuns();
  verify(runs, wfName, n, steps);
  const secs = (endOf(runs, begin, seen) - begin) / 1000;
  Object.assign(res, { runs_per_s: n / secs, steps_per_s: (n * steps) / secs });
  setCommits(res, before, after, cnt.calls(), n * steps);
  res.seconds = secs;
  return res;
}

// latency is W2: each run started and awaited before the next, idle
// worker. handle.result() polls every 1 s by default; the bench sets 10 ms
// on each handle so the figure measures the engine, not that interval.
async function w2(t, n, label) {
  const res = result("W2", t.kind, n, n, 0);
  const before = await t.commits();
  const { backend, wf } = await t.connect();
  const stop = await inProcessWorker(t);
  const report = progress(label);
  const lat = [];
  const begin = now();
  try {
    for (let i = 0; i < n; i++) {
      const t0 = now();
      const h = await wf.one.run({ i });
      h.resultPollIntervalMs = 10;
      const out = await h.result({ timeoutMs: 30_000 });
      lat.push(now() - t0);
      const want = expected(i, 1);
      if (out?.i !== want.i || out?.sum !== want.sum) {
        throw new Error(`run ${h.workflowRun.id} (input ${i}): result ${JSON.stringify(out)}, want ${JSON.stringify(want)}`);
      }
      report(i + 1, n, "runs");
    }
  } finally {
    await stop();
    await backend.stop();
  }
  const secs = (now() - begin) / 1000;
  const after = await t.commits();
  verify(await t.listRuns(), "bench-one", n, 1);
  res.runs_per_s = n / secs;
  setCommits(res, before, after, 0, n);
  Object.assign(res, {
    p50_ms: percentile(lat, 50),
    p95_ms: percentile(lat, 95),
    p99_ms: percentile(lat, 99),
    seconds: secs,
  });
  return res;
}

// sleepWorkload is W4: with the worker running, n runs that sleep 2 s then
// run one step are started; lateness is finished_at − started_at − 2 s.
async function sleepWorkload(t, n, label) {
  const res = result("W4", t.kind, n, 2 * n, 0);
  const before = await t.commits();
  const cnt = await t.counter();
  const { backend, wf } = await t.connect();
  const stop = await inProcessWorker(t);
  const begin = now();
  let seen;
  try {
    await startAll(wf.sleep, n);
    seen = await waitAll(cnt, n, progress(label));
  } finally {
    await stop();
    await backend.stop();
    await cnt.close();
  }
  const after = await t.commits();
  const runs = await t.listRuns();
  verify(runs, "bench-sleep", n, 1);
  const late = runs.map((r) => Number(r.finished_ms) - Number(r.started_ms) - SLEEP_MS);
  const secs = (endOf(runs, begin, seen) - begin) / 1000;
  Object.assign(res, { runs_per_s: n / secs, steps_per_s: (2 * n) / secs });
  setCommits(res, before, after, cnt.calls(), 2 * n);
  Object.assign(res, {
    lateness_p50_ms: percentile(late, 50),
    lateness_p99_ms: percentile(late, 99),
    seconds: secs,
  });
  return res;
}

// ---- main ----

function emit(r) {
  process.stdout.write(JSON.stringify(r) + "\n");
}

// sqliteSkipReason is why this node cannot run the TypeScript SQLite
// backend (with --sqlite-unavailable's explanation appended), or "" when
// it can.
async function sqliteSkipReason() {
  try {
    await import("node:sqlite");
    return "";
  } catch {
    let reason = `the TypeScript SQLite backend needs node:sqlite (Node 22.13 or later); this machine has Node ${process.version}`;
    if (opt["sqlite-unavailable"]) reason += `, and ${opt["sqlite-unavailable"]}`;
    return reason;
  }
}

// w5SQLiteSkip is why W5 with more than one worker process is not
// measured on SQLite: BackendSqlite opens node:sqlite with SQLite's
// default busy timeout, 0, and has no option to change it, so worker
// processes sharing one file fail each other's writes at once with
// "database is locked" (SQLITE_BUSY); the engine then fails the runs
// (tried: 53 of 200 runs failed with 2 processes, the bench stops at the
// first). W5 ×1 is measured.
const w5SQLiteSkip =
  "BackendSqlite sets no busy timeout (SQLite's default 0, no option to change it): with 2 or more worker processes on one file, writes fail at once with \"database is locked\" and the engine fails those runs";

async function measure(kind, workload, n, workers, label) {
  return withTarget(kind, async (t) => {
    switch (workload) {
      case "W0":
        return w0(t, n, label);
      case "W1":
        return throughput(t, "W1", "bench-seq3", 3, n, 0, label);
      case "W2":
        return w2(t, n, label);
      case "W3":
        return throughput(t, "W3", "bench-fanout", FAN_OUT + 1, n, 0, label);
      case "W4":
        return sleepWorkload(t, n, label);
      case "W5":
        return throughput(t, "W5", "bench-seq3", 3, n, workers, label);
    }
    throw new Error(`unknown workload ${workload}`);
  });
}

async function main() {
  const workloads = opt.workloads.split(",").filter((w) => w && w !== "L0");
  const runs = JSON.parse(opt.runs);
  const repeat = Number(opt.repeat);
  const backends = opt.backends.split(",").filter(Boolean);
  let failed = 0;
  for (const workload of workloads) {
    for (const backend of backends) {
      const workersList = workload === "W5" ? W5_WORKERS : [0];
      const n = runs[workload] ?? 0;
      let reason = "";
      if (backend !== "postgres" && backend !== "sqlite") reason = `no backend ${backend}`;
      else if (backend === "sqlite") reason = await sqliteSkipReason();
      if (!reason && workload === "W0b") reason = "OpenWorkflow 0.10 has no batch start API";
      if (reason) {
        for (const workers of workersList) {
          const r = result(workload, backend, n, 0, workers);
          r.repeat = 0;
          r.skipped = reason;
          emit(r);
        }
        continue;
      }
      if (backend === "postgres" && !admin) admin = postgres(opt["admin-url"], { max: 1, onnotice: () => {} });
      const measured = workersList.filter((w) => !(backend === "sqlite" && w > 1));
      for (let rep = 0; rep < repeat; rep++) {
        for (const workers of measured) {
          let label = workers > 0 ? `${workload} ×${workers} ${backend}` : `${workload} ${backend}`;
          if (repeat > 1) label += ` (${rep + 1}/${repeat})`;
          try {
            emit(await measure(backend, workload, n, workers, label));
          } catch (e) {
            if (stopping) return;
            failed++;
            const r = result(workload, backend, n, 0, workers);
            r.error = e.message;
            emit(r);
          }
        }
      }
      for (const workers of workersList.filter((w) => !measured.includes(w))) {
        const r = result(workload, backend, n, 0, workers);
        r.repeat = 0;
        r.skipped = w5SQLiteSkip;
        emit(r);
      }
    }
  }
  if (admin) await admin.end();
  process.exitCode = failed > 0 ? 1 : 0;
}

// worker is a W5 worker process.
async function worker() {
  const { backend, ow } = await connect(opt.backend, opt.url, false);
  const w = ow.newWorker({ concurrency });
  const rl = createInterface({ input: process.stdin });
  let started = false;
  let done;
  const finished = new Promise((r) => (done = r));
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (started) await w.stop();
    await backend.stop();
    done();
  };
  process.removeAllListeners("SIGTERM");
  process.removeAllListeners("SIGINT");
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  rl.on("line", async (l) => {
    if (l.trim() === "go" && !started) {
      started = true;
      await w.start();
    }
  });
  rl.on("close", stop);
  process.stdout.write("ready\n");
  await finished;
  process.exit(0);
}

const run = positionals[0] === "worker" ? worker : main;
run().catch((e) => {
  log(`TS bench: ${e.stack ?? e}`);
  process.exit(1);
});
