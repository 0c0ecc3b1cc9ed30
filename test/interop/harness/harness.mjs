// The TypeScript side of the Go/TypeScript interop tests.
//
// The Go tests (test/interop) start this script with node, one process
// per test and role, bound to one PostgreSQL namespace:
//
//   OW_URL        PostgreSQL URL (required)
//   OW_NAMESPACE  namespace id (required)
//   OW_SCHEMA     schema (default "openworkflow")
//   OW_MIGRATE    "1": let BackendPostgres.connect run its migrations
//   OW_TRACE      "1": install a minimal OpenTelemetry context manager and
//                 W3C propagator (API only, no SDK) so the client records
//                 a trace context in workflow_runs.context
//
// It speaks newline-delimited JSON on stdin/stdout. A request is
// {"id":n,"op":"...",...}; the answer is {"id":n,"ok":true,"result":...} or
// {"id":n,"ok":false,"error":"..."}. Unsolicited lines are events, such as
// {"event":"step","workflow":"...","step":"...","runId":"..."} each time a
// TypeScript step function really runs. Diagnostics go to stderr. The
// process exits when stdin closes.
import { createInterface } from "node:readline";
import { AsyncLocalStorage } from "node:async_hooks";
import { OpenWorkflow, Worker, defineWorkflow } from "openworkflow";
import { BackendPostgres } from "openworkflow/postgres";
import * as otel from "@opentelemetry/api";

const url = process.env.OW_URL;
const namespaceId = process.env.OW_NAMESPACE;
const schema = process.env.OW_SCHEMA || "openworkflow";
if (!url || !namespaceId) {
  console.error("harness: OW_URL and OW_NAMESPACE are required");
  process.exit(2);
}

function send(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

function emit(event, fields) {
  send({ event, ...fields });
}

// --- optional tracing: API-only context manager and propagator ---

class AlsContextManager {
  als = new AsyncLocalStorage();
  active() {
    return this.als.getStore() ?? otel.ROOT_CONTEXT;
  }
  with(ctx, fn, thisArg, ...args) {
    return this.als.run(ctx, () => fn.call(thisArg, ...args));
  }
  bind(ctx, target) {
    if (typeof target !== "function") return target;
    const self = this;
    return function (...args) {
      return self.with(ctx, () => target.apply(this, args));
    };
  }
  enable() {
    return this;
  }
  disable() {
    this.als.disable();
    return this;
  }
}

const traceparentPropagator = {
  inject(ctx, carrier, setter) {
    const sc = otel.trace.getSpanContext(ctx);
    if (!sc || !otel.isSpanContextValid(sc)) return;
    const flags = (sc.traceFlags & 0xff).toString(16).padStart(2, "0");
    setter.set(carrier, "traceparent", `00-${sc.traceId}-${sc.spanId}-${flags}`);
  },
  extract(ctx, carrier, getter) {
    const v = getter.get(carrier, "traceparent");
    const m = typeof v === "string" && /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(v);
    if (!m) return ctx;
    return otel.trace.setSpanContext(ctx, {
      traceId: m[1],
      spanId: m[2],
      traceFlags: parseInt(m[3], 16),
      isRemote: true,
    });
  },
  fields() {
    return ["traceparent"];
  },
};

if (process.env.OW_TRACE === "1") {
  otel.context.setGlobalContextManager(new AlsContextManager());
  otel.propagation.setGlobalPropagator(traceparentPropagator);
}

// --- the backend and client ---

const backend = await BackendPostgres.connect(url, {
  namespaceId,
  schema,
  runMigrations: process.env.OW_MIGRATE === "1",
});
const ow = new OpenWorkflow({ backend });

// --- workflow implementations, registered on demand by startWorker ---

class InteropError extends Error {
  constructor(message) {
    super(message);
    this.name = "InteropError";
  }
}

function stepFn(workflow, step, runId, value) {
  return () => {
    emit("step", { workflow, step, runId });
    return value;
  };
}

// Each kind is one workflow body; startWorker binds it to a name/version.
const kinds = {
  // Returns its input and who ran it.
  echo: (name) => async ({ input, run, version }) => ({
    echo: input ?? null,
    by: "ts",
    runId: run.id,
    version: version ?? null,
  }),

  // Two steps named "a" (durable keys "a" and "a:1"), a durable sleep
  // "nap" of input.sleepMs, then step "b". The Go twin is stepsSleep in
  // workflows_test.go: either side can begin a run and the other finish it.
  "steps-sleep": (name) => async ({ input, step, run }) => {
    const a = await step.run({ name: "a" }, stepFn(name, "a", run.id, { n: input.n + 1 }));
    const a1 = await step.run({ name: "a" }, stepFn(name, "a:1", run.id, "second-a"));
    await step.sleep("nap", `${input.sleepMs}ms`);
    const b = await step.run({ name: "b" }, stepFn(name, "b", run.id, "b-ts"));
    return { a, a1, b, by: "ts" };
  },

  // A child for Go parents: doubles input.n.
  "child-double": (name) => async ({ input, step, run }) => {
    const doubled = await step.run({ name: "double" }, stepFn(name, "double", run.id, input.n * 2));
    return { child: "ts", doubled };
  },

  // A TypeScript parent of a child implemented in Go (input.child names it).
  "parent-of": (name) => async ({ input, step }) => {
    const out = await step.runWorkflow(
      { name: input.child, ...(input.childVersion ? { version: input.childVersion } : {}) },
      input.childInput,
      { timeout: "60s" },
    );
    return { parent: "ts", childOutput: out };
  },

  // Waits for input.signal and returns what the wait resolved to.
  "wait-signal": (name) => async ({ input, step }) => {
    const got = await step.waitForSignal({ signal: input.signal, timeout: input.timeout ?? "60s" });
    return { got, by: "ts" };
  },

  // Sends input.signal with input.data as a durable step.
  "send-signal": (name) => async ({ input, step }) => {
    const sent = await step.sendSignal({ signal: input.signal, data: input.data });
    return { sent, by: "ts" };
  },

  // Fails with a named error.
  fail: (name) => async () => {
    throw new InteropError("boom from ts");
  },

  // A step that fails with a named error; no retry.
  "fail-step": (name) => async ({ step }) => {
    await step.run({ name: "explode", retryPolicy: { maximumAttempts: 1 } }, () => {
      throw new InteropError("step boom from ts");
    });
    return "unreachable";
  },

  // Step "first", then step "second" (no retry), which fails while
  // secondFails is set (op setSecondFails): a run to fail, then retry from
  // Go once the cause is gone.
  "fail-second": (name) => async ({ step, run }) => {
    const first = await step.run({ name: "first" }, stepFn(name, "first", run.id, "one"));
    const second = await step.run({ name: "second", retryPolicy: { maximumAttempts: 1 } }, () => {
      emit("step", { workflow: name, step: "second", runId: run.id });
      if (secondFails) throw new InteropError("second step refused");
      return "two";
    });
    return `${first}+${second}`;
  },

  // Returns input.value unchanged, through a step.
  "step-echo": (name) => async ({ input, step }) => {
    const v = await step.run({ name: "echo" }, () => input.value);
    return { value: v };
  },
};

let worker = null;
let secondFails = true; // see kind "fail-second"

// --- operations ---

const handles = new Map();

const ops = {
  async ping() {
    return { namespaceId, schema };
  },

  async startWorker({ workflows, concurrency }) {
    if (worker) throw new Error("worker already started");
    const defs = workflows.map(({ name, version, kind }) => {
      const make = kinds[kind];
      if (!make) throw new Error(`unknown workflow kind ${kind}`);
      return defineWorkflow({ name, ...(version ? { version } : {}) }, make(name));
    });
    worker = new Worker({ backend, workflows: defs, concurrency: concurrency ?? 2 });
    await worker.start();
    return { workerIds: worker.workerIds };
  },

  async setSecondFails({ fails }) {
    secondFails = fails;
    return null;
  },

  async stopWorker() {
    if (!worker) return null;
    await worker.stop();
    worker = null;
    return null;
  },

  // Starts a run with the client, keeping its handle for "result".
  async start({ name, version, input, idempotencyKey, availableAt, deadlineAt, trace }) {
    const spec = { name, ...(version ? { version } : {}) };
    const opts = {};
    if (idempotencyKey) opts.idempotencyKey = idempotencyKey;
    if (availableAt) opts.availableAt = new Date(availableAt);
    if (deadlineAt) opts.deadlineAt = new Date(deadlineAt);
    const doStart = () => ow.runWorkflow(spec, input, opts);
    let handle;
    if (trace) {
      const ctx = otel.trace.setSpanContext(otel.ROOT_CONTEXT, {
        traceId: trace.traceId,
        spanId: trace.spanId,
        traceFlags: 1,
        isRemote: true,
      });
      handle = await otel.context.with(ctx, doStart);
    } else {
      handle = await doStart();
    }
    handles.set(handle.workflowRun.id, handle);
    return handle.workflowRun;
  },

  // Waits with the run's handle (the TS client's result()), polling every
  // 1 s as the TS client does.
  async result({ id, timeoutMs }) {
    const handle = handles.get(id);
    if (!handle) throw new Error(`no handle for run ${id} in this process`);
    try {
      return { output: await handle.result({ timeoutMs: timeoutMs ?? 30000 }) };
    } catch (e) {
      return { error: e instanceof Error ? e.message : String(e) };
    }
  },

  async get({ id }) {
    return await backend.getWorkflowRun({ workflowRunId: id });
  },

  async list(params) {
    return await backend.listWorkflowRuns(params ?? {});
  },

  async count() {
    return await backend.countWorkflowRuns();
  },

  async cancel({ id }) {
    try {
      await ow.cancelWorkflowRun(id);
      return { canceled: true };
    } catch (e) {
      return { error: e instanceof Error ? e.message : String(e) };
    }
  },

  async signal({ signal, data, idempotencyKey }) {
    return await ow.sendSignal({ signal, data, ...(idempotencyKey ? { idempotencyKey } : {}) });
  },

  async listSteps({ id, limit }) {
    return await backend.listStepAttempts({ workflowRunId: id, ...(limit ? { limit } : {}) });
  },

  async getSignalDelivery({ stepAttemptId }) {
    const d = await backend.getSignalDelivery({ stepAttemptId });
    return d === undefined ? { delivered: false } : { delivered: true, data: d };
  },

  // One claim with the TS backend's claim query.
  async claim({ workerId, leaseMs }) {
    return await backend.claimWorkflowRun({ workerId, leaseDurationMs: leaseMs ?? 30000 });
  },

  // The raw backend create, for idempotency tests.
  async create({ name, version, idempotencyKey, input }) {
    return await backend.createWorkflowRun({
      workflowName: name,
      version: version ?? null,
      idempotencyKey: idempotencyKey ?? null,
      config: {},
      context: null,
      input: input ?? null,
      parentStepAttemptNamespaceId: null,
      parentStepAttemptId: null,
      availableAt: null,
      deadlineAt: null,
    });
  },

  // The text TS hashes for the advisory lock of a keyed create.
  async lockScope({ name, idempotencyKey }) {
    return JSON.stringify({ namespaceId, workflowName: name, idempotencyKey });
  },
};

const rl = createInterface({ input: process.stdin });
rl.on("line", (line) => {
  if (!line.trim()) return;
  let req;
  try {
    req = JSON.parse(line);
  } catch (e) {
    console.error("harness: bad request line", line);
    return;
  }
  const op = ops[req.op];
  if (!op) {
    send({ id: req.id, ok: false, error: `unknown op ${req.op}` });
    return;
  }
  Promise.resolve()
    .then(() => op(req.args ?? {}))
    .then(
      (result) => send({ id: req.id, ok: true, result: result ?? null }),
      (e) => send({ id: req.id, ok: false, error: e instanceof Error ? e.stack || e.message : String(e) }),
    );
});
rl.on("close", async () => {
  try {
    if (worker) await worker.stop();
    await backend.stop();
  } finally {
    process.exit(0);
  }
});

send({ event: "ready", namespaceId, schema });
