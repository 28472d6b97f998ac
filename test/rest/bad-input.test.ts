/**
 * @module A generated corpus of bad input: every route of the catalog (routes/http/catalog.ts OPERATIONS), the
 * batch route's command bodies and the command socket's frames get malformed JSON, wrong types, unknown
 * fields and ops, huge and deep bodies, unsafe ids, bad query parameters and bad headers. Every answer must be
 * a 4xx with the error envelope and a code of the error table (docs/api.md "Errors", at its status), and nothing may be written: the
 * task's WAL, the session's task list and the would-be session and task stay as they were. fast-check mutates
 * one valid request per route, with a fixed seed and bounded runs.
 */
import { SELF } from "cloudflare:test";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPERATIONS, type Operation } from "../../routes/http/catalog.js";
import { STATUS_OF } from "../../durable-objects/shared/http-errors.js";
import { ERROR_CODES, type ErrorCode, MAX_DOCUMENT_DEPTH, MAX_JSON_BYTES, MAX_JSON_DEPTH } from "../../src/core/index.js";
import { ADMIN, call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { openSocket, type TestSocket } from "../support/test-socket.js";
import { BASE, bindings, expectOk, signClaims } from "../support/support.js";

/** The seed each property's own seed derives from (per route and kind): a failure replays exactly. */
const SEED = 20_261_123;
/** Runs of each generated kind of bad input, per route. */
const RUNS = 4;

// ---- the fixture: one session, one task with a held step and a ready one, two worker runs ----------------
// Each route's valid request would succeed against it (bar complete and reopen, which the task's state
// refuses), so a mutant that slipped through a check would show as a 2xx or a write, not as a 409.

type Caller = "admin" | "orch" | "worker" | "idle" | "observer" | "approver";

interface Fixture {
  readonly s: TestSession;
  /** A second session: its tokens are out of scope everywhere in `s`. */
  readonly other: TestSession;
  readonly tid: string;
  /** `/v1/sessions/{sid}/tasks/{tid}`. */
  readonly t: string;
  /** A worker run holding step `a`. */
  readonly worker: { token: string; run_id: string };
  /** An open task-level action (a step-level one would hold step `a` up, which the step writes use). */
  readonly actionId: string;
  readonly tokens: Record<Caller, string>;
  readonly forged: string;
  readonly expired: string;
}

/**
 * What a refused request must leave as it was, as last seen: the task's last wal_seq, the session's task count,
 * and whether the session and the task the create routes name exist. Each check compares with the last one
 * and then moves on, so a request that wrongly writes fails its own case and not every case after it.
 */
interface Seen {
  seq: number;
  tasks: number;
  newSession: boolean;
  newTask: boolean;
}
let seen: Seen;

/** A session id and a task id the create routes' valid bodies name: neither may exist after any reject. */
const NEW_SESSION = "corpus-new-session";
const NEW_TASK = "corpus-new-task";

let fx: Fixture;

async function lastSeq(t: string, token: string): Promise<number> {
  const res = await SELF.fetch(`${BASE}${t}/wal?limit=1`, { headers: { authorization: `Bearer ${token}` } });
  await res.body?.cancel();
  return Number(res.headers.get("x-last-wal-seq"));
}

async function taskCount(s: TestSession): Promise<number> {
  return expectOk(await call("GET", `/v1/sessions/${s.sid}/tasks?include_terminal=true`, s.orch)).total;
}

beforeAll(async () => {
  const s = await newSession();
  const other = await newSession();
  const tid = "corpus";
  // A lease of a day: no lease expires while the corpus runs, so the WAL only changes if a bad input is taken.
  const t = await newTask(s, tid, [step("a"), step("b", ["a"]), step("c")], { step_lease_timeout_ms: 86_400_000 });
  const worker = await dispatch(s, t, { max_steps: 2 });
  const idle = await dispatch(s, t);
  expectOk(await call("POST", `${t}/steps/a/claim`, worker.token));
  const action = expectOk(await call("POST", `${t}/actions`, s.orch, { kind: "approval", prompt: "Approve the plan?" }), 201);
  const approver = expectOk(await call("POST", `/v1/sessions/${s.sid}/tokens`, s.orch, { role: "approver" }), 201);
  const now = Math.floor(Date.now() / 1000);
  const claims = { role: "orchestrator", sid: s.sid, sub: "orchestrator", run: "orun_x" };
  fx = {
    s,
    other,
    tid,
    t,
    worker,
    actionId: action.action_id,
    tokens: { admin: ADMIN, orch: s.orch, worker: worker.token, idle: idle.token, observer: s.observer, approver: approver.token },
    forged: await signClaims({ ...claims, iat: now, exp: now + 3600 }, "another-secret"),
    expired: await signClaims({ ...claims, iat: now - 7200, exp: now - 3600 }),
  };
  seen = { seq: await lastSeq(t, s.orch), tasks: await taskCount(s), newSession: false, newTask: false };
});

// ---- the route table: a valid request per operation, and what is known to be bad in it -------------------

/** What the corpus knows of one operation: a valid request to mutate, and the bad values that are its own. */
interface RouteCase {
  readonly caller: Caller;
  /** A valid body (routes that take one). */
  readonly body?: (f: Fixture) => Record<string, unknown>;
  /** Body fields that take any JSON value, bounded only in depth and size: a wrong type is no error there. */
  readonly free?: readonly string[];
  /** Body fields that are ids (`^[a-z0-9_-]{1,64}$`). */
  readonly ids?: readonly string[];
  /** Bad bodies no mutator makes: unknown ops, nested unsafe ids, out-of-range numbers. */
  readonly badBodies?: (f: Fixture) => readonly unknown[];
  /** Values known to be bad, per query parameter. */
  readonly badQuery?: Readonly<Record<string, readonly string[]>>;
  /** The self-description routes take any valid token, whatever its session or role. */
  readonly anyToken?: boolean;
}

const reason = () => ({ reason: "a reason" });
const lifecycle: RouteCase = { caller: "orch", body: reason, badBodies: () => [{ reason: "x".repeat(8_001) }, { reason: null }] };
const events: RouteCase = { caller: "orch", badQuery: { after_seq: ["-1", "abc", "1.5", "999999", "9007199254740993"] } };
const actionRequest = (kind: "approval" | "input") => () => ({ kind, prompt: "Which source?", ...(kind === "input" ? { input_schema: { type: "object" } } : {}), timeout_ms: 60_000 });
const badActionRequests = () => [
  { kind: "question", prompt: "p" },
  { kind: "approval", prompt: "" },
  { kind: "approval" },
  { kind: "approval", prompt: "p", timeout_ms: 999 },
  { kind: "approval", prompt: "p", timeout_ms: 1.5 },
  { kind: "approval", prompt: "p", timeout_ms: 31 * 86_400_000 },
  { kind: "input", prompt: "p", input_schema: [] },
  { kind: "input", prompt: "p", input_schema: { k: JSON.parse(deepText(MAX_JSON_DEPTH)) } },
  { kind: "approval", prompt: "x".repeat(8_001) },
  // The step is the path's, never the body's.
  { kind: "approval", prompt: "p", step_id: "a" },
];
const pageQuery = { limit: ["0", "501", "abc", "1.5", "-1"], offset: ["-1", "abc", "1000001"] };

/** One entry per operationId of the catalog (a test below fails when an operation has none). */
const ROUTES: Readonly<Record<string, RouteCase>> = {
  createSession: {
    caller: "admin",
    body: () => ({ session_id: NEW_SESSION, orchestrator_agent_id: "o", metadata: { k: 1 } }),
    ids: ["session_id"],
    badBodies: () => [{ orchestrator_agent_id: "" }, { metadata: [] }, { metadata: { k: JSON.parse(deepText(MAX_JSON_DEPTH)) } }, { metadata: { k: "x".repeat(MAX_JSON_BYTES) } }],
  },
  mintToken: { caller: "admin", body: () => ({ role: "observer", agent_id: "obs", ttl_seconds: 3_600 }), badBodies: () => [{ role: "admin" }, { role: "worker" }, { role: "observer", ttl_seconds: 59 }] },
  listTokens: { caller: "orch", badQuery: { limit: ["0", "1001", "abc", "1.5", "-1"], cursor: ["", "abc", "-1", "1".repeat(16)] } },
  revokeToken: { caller: "orch" },
  // Every mutant is refused before anything is revoked (a revoke-all would end the fixture's tokens).
  revokeAllTokens: { caller: "orch", body: () => ({}), badBodies: () => [{ reason: "x" }, { role: "orchestrator" }] },
  getSession: { caller: "orch" },
  setPeerCredential: {
    caller: "orch",
    body: () => ({ origin: "https://peer.example", authorization: "Bearer peer-token" }),
    badBodies: () => [
      { origin: "https://peer.example/", authorization: "Bearer x" },
      { origin: "https://peer.example/a2a", authorization: "Bearer x" },
      { origin: "HTTPS://Peer.Example", authorization: "Bearer x" },
      { origin: "https://peer.example:443", authorization: "Bearer x" },
      { origin: "ftp://peer.example", authorization: "Bearer x" },
      { origin: "peer.example", authorization: "Bearer x" },
      { origin: "https://peer.example", authorization: "" },
      { origin: "https://peer.example", authorization: "Bearer a\r\nX-Injected: 1" },
      { origin: "https://peer.example" },
      { authorization: "Bearer x" },
    ],
  },
  listPeers: { caller: "orch" },
  deletePeerCredential: { caller: "orch" },
  listTasks: {
    caller: "orch",
    badQuery: { include_terminal: ["yes", "1", ""], include_archived: ["yes", "1", ""], status: ["x".repeat(33)], limit: ["0", "501", "abc", "1.5", "-1", "1e2"], offset: ["-1", "abc", "1000001"] },
  },
  createTask: {
    caller: "orch",
    body: () => ({ task_id: NEW_TASK, wal_name: NEW_TASK, title: "T", summary: "s", steps: [step("a"), step("b", ["a"])], metadata: { k: 1 }, step_lease_timeout_ms: 60_000, priority: 1 }),
    ids: ["task_id", "wal_name"],
    badBodies: (f) => {
      const base = { task_id: NEW_TASK, wal_name: NEW_TASK, title: "T" };
      return [
        { ...base, steps: [step("../x")] },
        { ...base, steps: [step(".hidden")] },
        { ...base, steps: [step("a", ["a"])] },
        { ...base, steps: [step("a"), step("a")] },
        { ...base, steps: [step("a", ["nope"])] },
        { ...base, steps: [step("a", ["b"]), step("b", ["a"])] },
        { ...base, wal_name: f.tid, steps: [] },
        { ...base, task_id: f.tid, steps: [] },
        { ...base, steps: [], metadata: { k: JSON.parse(deepText(MAX_JSON_DEPTH)) } },
        { ...base, steps: [], metadata: { k: "x".repeat(MAX_JSON_BYTES) } },
        { ...base, title: "", steps: [] },
        { ...base, steps: [], step_lease_timeout_ms: 999 },
      ];
    },
  },
  getTaskTemplate: { caller: "orch", anyToken: true },
  listTools: { caller: "orch", anyToken: true },
  getTask: { caller: "orch" },
  updateTask: {
    caller: "orch",
    body: () => ({ ops: [{ op: "update_step", step_id: "b", fields: { title: "new" } }, { op: "update_task", summary: "x" }] }),
    badBodies: () => [
      { ops: [] },
      { ops: [{ op: "explode" }] },
      { ops: [{ op: "DELETE_STEP", step_id: "b" }] },
      { ops: [{ step_id: "b" }] },
      { ops: [{ op: "add_step", step: step("../etc") }] },
      { ops: [{ op: "add_step", step: step("é") }] },
      { ops: [{ op: "delete_step", step_id: "x".repeat(65) }] },
      { ops: [{ op: "update_step", step_id: "b", fields: {} }] },
      { ops: [{ op: "add_dependency", step_id: "a", depends_on_step_id: "b" }] },
      { ops: [{ op: "delete_step", step_id: "a" }] },
      // Atomic: a good op before a bad one writes nothing.
      { ops: [{ op: "update_task", title: "kept?" }, { op: "explode" }] },
      { ops: [{ op: "update_task", title: "kept?" }, { op: "delete_step", step_id: "nope" }] },
    ],
  },
  completeTask: lifecycle,
  failTask: lifecycle,
  cancelTask: lifecycle,
  blockTask: lifecycle,
  reopenTask: lifecycle,
  dispatchWorker: {
    caller: "orch",
    body: () => ({ agent_id: "w", worker_pool_id: "default", allowed_step_ids: ["b"], timeout_ms: 60_000, max_steps: 2 }),
    ids: ["worker_pool_id"],
    badBodies: () => [{ allowed_step_ids: [] }, { allowed_step_ids: ["../x"] }, { max_steps: 0 }, { max_steps: 1.5 }, { timeout_ms: 999 }, { agent_id: "" }],
  },
  finishRun: { caller: "worker", body: () => ({ outcome: "finished", result: { ok: true } }), free: ["result"], badBodies: () => [{ outcome: "done" }, { outcome: "finished", result: JSON.parse(deepText(MAX_JSON_DEPTH + 1)) }, { outcome: "finished", result: "x".repeat(MAX_JSON_BYTES) }] },
  cancelRun: { caller: "orch", body: reason },
  pauseTask: lifecycle,
  resumeTask: lifecycle,
  archiveTask: lifecycle,
  requestStepAction: { caller: "worker", body: actionRequest("input"), badBodies: badActionRequests },
  requestTaskAction: { caller: "orch", body: actionRequest("approval"), badBodies: badActionRequests },
  listTaskActions: { caller: "orch", badQuery: { status: ["closed", "OPEN", "", "expired"], ...pageQuery } },
  getTaskAction: { caller: "orch", badQuery: { wait_ms: ["-1", "30001", "abc", "1.5", "1e3", ""] } },
  respondAction: {
    caller: "orch",
    body: () => ({ decision: "approved", comment: "looks right" }),
    badBodies: () => [{}, { decision: "expired" }, { decision: "withdrawn" }, { decision: "maybe" }, { decision: "approved", comment: "x".repeat(8_001) }, { decision: "approved", action_id: "act_x" }, { decision: "submitted", input: "x".repeat(MAX_JSON_BYTES) }],
  },
  listSessionActions: { caller: "orch", badQuery: { status: ["resolved", "closed", ""], ...pageQuery } },
  linkTasks: {
    caller: "orch",
    body: (f) => ({ kind: "evidence", from_task_id: f.tid, ref: "trace://run-1", reason: "the review" }),
    ids: ["from_task_id"],
    badBodies: (f) => [
      { kind: "blocks", from_task_id: f.tid },
      { kind: "blocks", from_task_id: f.tid, to_task_id: f.tid },
      { kind: "evidence", from_task_id: f.tid },
      { kind: "evidence", from_task_id: f.tid, ref: "" },
      { kind: "spawned_subagent", from_task_id: f.tid, to_task_id: "other" },
      { kind: "blocks", from_task_id: f.tid, to_task_id: "ghost" },
    ],
  },
  unlinkTasks: { caller: "orch" },
  getTaskGraph: { caller: "orch", badQuery: { limit: ["0", "1001", "abc", "1.5", "-1"], cursor: ["", "x".repeat(513), "bm90LWEtY3Vyc29y"] } },
  querySteps: {
    caller: "orch",
    badQuery: {
      status: ["exploded", "ready,nope", "READY"],
      worker_pool_id: ["UPPER", "..", ".hidden", "x".repeat(65), "é"],
      claimed_by_agent_id: ["x".repeat(129)],
      include_terminal_steps: ["yes", ""],
      limit: ["0", "1001", "abc"],
      offset: ["-1", "x"],
    },
  },
  // The idle run: step c is ready for it.
  claimStep: { caller: "idle", body: () => ({}) },
  claimNextStep: { caller: "idle", body: () => ({}) },
  updateStepStatus: {
    caller: "worker",
    body: () => ({ status: "completed", result_summary: "done", artifact_ids: ["x"], claim_next: true }),
    badBodies: () => [{ status: "exploded" }, { status: "completed", artifact_ids: Array.from({ length: 101 }, () => "x") }, { status: "completed", artifact_ids: [""] }, { status: "completed", result_summary: "x".repeat(8_001) }],
  },
  appendProgress: {
    caller: "worker",
    body: () => ({ phase: "p", summary: "s", counters: { n: 1 }, output_refs: ["ref"] }),
    badBodies: () => [{ counters: { n: "1" } }, { counters: { ["x".repeat(65)]: 1 } }, { output_refs: Array.from({ length: 101 }, () => "r") }, { phase: "x".repeat(65) }],
  },
  batch: {
    caller: "worker",
    body: (f) => ({ commands: [{ token: f.worker.token, method: "POST", path: `${f.t}/steps/a/progress`, body: { phase: "p" } }] }),
    badBodies: (f) => {
      const command = { token: f.worker.token, method: "POST", path: `${f.t}/steps/a/progress`, body: { phase: "p" } };
      return [
        { commands: [] },
        { commands: Array.from({ length: 257 }, () => command) },
        { commands: [{ ...command, method: "DELETE" }] },
        { commands: [{ ...command, token: "" }] },
        { commands: [{ ...command, path: "" }] },
        { commands: [{ ...command, path: "x".repeat(1_001) }] },
        { commands: [{ ...command, idempotency_key: "" }] },
        { commands: [{ ...command, idempotency_key: "k".repeat(256) }] },
        { commands: [{ ...command, body: [] }] },
      ];
    },
  },
  commandSocket: { caller: "orch" },
  getTaskSummary: { caller: "orch", badQuery: { token_budget: ["99", "100001", "abc", "-5", "1.5"] } },
  exportWal: { caller: "orch", badQuery: { after_seq: ["-1", "abc", "1.5", "9007199254740992"], limit: ["0", "10001", "abc"] } },
  streamTaskEvents: events,
  streamSessionEvents: events,
  // A paused schedule in the past's window: were a mutant ever taken, it would create no task.
  createSchedule: {
    caller: "orch",
    body: () => ({ schedule_id: "corpus-schedule", cron: "0 9 * * 1-5", timezone: "Europe/Paris", task: { title: "T", steps: [] }, overlap: "skip", catchup_window_ms: 60_000, start_at: "2030-01-01T00:00:00Z", end_at: "2031-01-01T00:00:00Z", paused: true }),
    ids: ["schedule_id"],
    badBodies: () => {
      const good = { schedule_id: "corpus-schedule", cron: "0 9 * * 1-5", task: { title: "T", steps: [] } };
      return [
        { ...good, cron: "* * *" },
        { ...good, cron: "0 0 0 * * * *" },
        { ...good, cron: "61 * * * *" },
        { ...good, cron: "@daily" },
        { ...good, timezone: "Nowhere/Special" },
        { ...good, start_at: "2031-01-01T00:00:00Z", end_at: "2030-01-01T00:00:00Z" },
        { ...good, start_at: "tomorrow" },
        { ...good, catchup_window_ms: -1 },
        { ...good, catchup_window_ms: 604_800_001 },
        { ...good, overlap: "queue" },
        { ...good, schedule_id: "s".repeat(48) },
        { ...good, task: { title: "T", steps: [], task_id: "fixed" } },
        { ...good, task: { title: "T", steps: [], input_refs: Array.from({ length: 100 }, () => ({})) } },
        { ...good, task: { steps: [] } },
      ];
    },
  },
  listSchedules: { caller: "orch" },
  getSchedule: { caller: "orch" },
  pauseSchedule: { caller: "orch", body: () => ({}) },
  resumeSchedule: { caller: "orch", body: () => ({}) },
  triggerSchedule: { caller: "orch", body: () => ({}) },
  deleteSchedule: { caller: "orch" },
  streamScheduleEvents: events,
  // A loopback receiver (OUTBOUND_ALLOWLIST "loopback" in the tests); every bad body is refused before a subscription is stored.
  createWebhook: {
    caller: "orch",
    body: () => ({ url: "http://127.0.0.1:9/corpus", events: ["task.completed"], description: "corpus" }),
    badBodies: () => [
      { url: "http://10.0.0.1/hook", events: ["task.completed"] },
      { url: "http://169.254.169.254/latest/meta-data", events: ["task.completed"] },
      { url: "ftp://127.0.0.1/hook", events: ["task.completed"] },
      { url: "not a url", events: ["task.completed"] },
      { url: `http://127.0.0.1:9/${"x".repeat(2_049)}`, events: ["task.completed"] },
      { url: "http://127.0.0.1:9/hook", events: [] },
      { url: "http://127.0.0.1:9/hook", events: ["task.exploded"] },
      { url: "http://127.0.0.1:9/hook" },
      { url: "http://127.0.0.1:9/hook", events: ["task.completed"], description: "x".repeat(501) },
      { url: "http://127.0.0.1:9/hook", events: ["task.completed"], secret: "whsec_chosen" },
    ],
  },
  listWebhooks: { caller: "orch" },
  getWebhook: { caller: "orch" },
  deleteWebhook: { caller: "orch" },
  listWebhookDeliveries: { caller: "orch", badQuery: { status: ["exploded", "PENDING", ""], limit: ["0", "501", "abc", "1.5", "-1"], after: ["", "x".repeat(513)] } },
  retryWebhookDelivery: { caller: "orch", body: () => ({}) },
};

// ---- mutants: one bad request each -------------------------------------------------------------------------

/** A change to a route's valid request; whatever it leaves out stays valid. */
interface Mutant {
  readonly note: string;
  readonly method?: string;
  /** Path parameters, as they go into the URL (already percent-encoded where they are meant to be). */
  readonly params?: Readonly<Record<string, string>>;
  /** The query string, without `?`. */
  readonly query?: string;
  /** Headers to set; null drops one. */
  readonly headers?: Readonly<Record<string, string | null>>;
  /** The body text. */
  readonly body?: string;
}

/** JSON text of `levels` nested arrays (or objects), built without recursion. */
const deepText = (levels: number, kind: "array" | "object" = "array") => (kind === "array" ? "[".repeat(levels) + "]".repeat(levels) : '{"k":'.repeat(levels) + "1" + "}".repeat(levels));
/** Depths past each bound: a free-form value's, a document's, and far past workerd's stack (about 2,550). */
const TOO_DEEP = [MAX_JSON_DEPTH + 1, MAX_DOCUMENT_DEPTH + 1, 3_000, 100_000];
/** Ids the runtime must refuse, as they sit in a JSON body. */
const UNSAFE_IDS = ["..", "../etc/passwd", ".hidden", "é", "😀", "x".repeat(65), "UPPER", "a/b", "a b", "", "a\u0000b", "%2e%2e"];
/**
 * Ids the runtime must refuse, as they sit in a URL path (some percent-encoded, one malformed). No `..` or
 * `%2e%2e`: URL parsing resolves those dot segments before any server sees the path, which then names
 * another route (`.../tasks/../events` is the session's stream).
 */
const UNSAFE_PATH_IDS = ["...", "..%2F..%2Fetc", ".hidden", "%C3%A9", "%F0%9F%98%80", "x".repeat(65), "x".repeat(2_000), "UPPER", "a%2Fb", "%00", "a%20b", "%ZZ"];
/** Keys a caller may send that are dropped, not refused (identity comes from the token). */
const ACTOR_FIELDS = new Set(["actor_agent_id", "actor_run_id", "actor_role", "actor"]);

/** JSON values of every type; `differentFrom` keeps those whose type differs from that value's. */
function otherTypeArb(differentFrom: unknown): fc.Arbitrary<unknown> {
  const typeOf = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);
  return fc
    .oneof(
      fc.string({ maxLength: 20 }),
      fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(-1, 0, 1e300, Number.MAX_SAFE_INTEGER + 2)),
      fc.boolean(),
      fc.constant(null),
      fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }),
      fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
    )
    .filter((v) => typeOf(v) !== typeOf(differentFrom));
}

/** `body` as JSON text with `key` set to the JSON text `valueText` (which may be anything, even 100,000 levels deep). */
function withFieldText(body: Record<string, unknown>, key: string, valueText: string): string {
  const marker = "\u0001field\u0001";
  return JSON.stringify({ ...body, [key]: marker }).replace(JSON.stringify(marker), valueText);
}

/** A kind of bad input: which routes it applies to, and its mutants (enumerated, or generated by fast-check). */
interface Kind {
  readonly name: string;
  readonly applies: (op: Operation, c: RouteCase) => boolean;
  readonly mutants: (op: Operation, c: RouteCase, f: Fixture) => readonly Mutant[] | fc.Arbitrary<Mutant>;
}

/** A stand-in for the fixture while tests are collected (before it exists): only the shape of bodies is read. */
const SHAPE: Fixture = {
  s: { sid: "s", orch: "o", observer: "v" },
  other: { sid: "s2", orch: "o2", observer: "v2" },
  tid: "t",
  t: "/t",
  worker: { token: "w", run_id: "r" },
  actionId: "act",
  tokens: { admin: "a", orch: "o", worker: "w", idle: "i", observer: "v", approver: "p" },
  forged: "f",
  expired: "e",
};

const hasBody = (op: Operation, c: RouteCase) => op.body !== undefined && c.body !== undefined;
const keysOf = (c: RouteCase, f: Fixture = SHAPE) => Object.keys(c.body!(f));
const mutates = (op: Operation) => op.method !== "get";
const METHODS = ["GET", "POST", "PATCH", "PUT", "DELETE"];

const KINDS: readonly Kind[] = [
  {
    name: "malformed JSON",
    applies: hasBody,
    mutants: (_op, c, f) => {
      const text = JSON.stringify(c.body!(f));
      return fc.oneof(
        fc.integer({ min: 1, max: Math.max(1, text.length - 1) }).map((n) => ({ note: `cut at ${n}`, body: text.slice(0, n) })),
        fc.constantFrom("}", "]", ",", "x", "\u0000", " {").map((junk) => ({ note: `junk ${JSON.stringify(junk)}`, body: text + junk })),
        // Not a leading byte order mark: reading a body as text drops it (RFC 8259 lets a parser ignore it).
        fc.constantFrom("{'a':1}", "{a:1}", '{"a":1,}', "{\"a\":NaN}", "{\"a\":\"\\x\"}", "{\"a\"\u0000:1}").map((body) => ({ note: `not JSON: ${body}`, body })),
      );
    },
  },
  {
    name: "a body that is not an object",
    applies: hasBody,
    mutants: () => ["[]", "[{}]", "1", '"s"', "null", "true"].map((body) => ({ note: body, body })),
  },
  {
    name: "a field of the wrong type",
    applies: (op, c) => hasBody(op, c) && keysOf(c).some((k) => !(c.free ?? []).includes(k)),
    mutants: (_op, c, f) => {
      const body = c.body!(f);
      const keys = Object.keys(body).filter((k) => !(c.free ?? []).includes(k));
      return fc.constantFrom(...keys).chain((key) => otherTypeArb(body[key]).map((value) => ({ note: `${key} = ${JSON.stringify(value)}`, body: JSON.stringify({ ...body, [key]: value }) })));
    },
  },
  {
    name: "an unknown field",
    applies: hasBody,
    mutants: (_op, c, f) => {
      const body = c.body!(f);
      const key = fc.oneof(
        fc.string({ minLength: 1, maxLength: 16 }).filter((k) => !(k in body) && !ACTOR_FIELDS.has(k)),
        fc.constantFrom("__proto__", "constructor", "toString", "hasOwnProperty", ""),
      );
      const text = JSON.stringify(body);
      return fc.oneof(
        fc.tuple(key, fc.jsonValue({ maxDepth: 2 })).map(([k, v]) => ({ note: `${JSON.stringify(k)}: ${JSON.stringify(v)}`, body: JSON.stringify({ ...body, [k]: v }) })),
        // The same key, escaped: JSON.parse makes it `__proto__` all the same.
        fc.constant({ note: "an escaped __proto__", body: `{"\\u005f_proto__":{"x":1}${text === "{}" ? "" : `,${text.slice(1, -1)}`}}` }),
      );
    },
  },
  {
    name: "a field too long",
    applies: (op, c) => hasBody(op, c) && keysOf(c).length > 0,
    mutants: (_op, c, f) => fc.constantFrom(...keysOf(c, f)).map((key) => ({ note: `${key}: 70,000 characters`, body: JSON.stringify({ ...c.body!(f), [key]: "x".repeat(70_000) }) })),
  },
  {
    name: "a field nested too deep",
    applies: (op, c) => hasBody(op, c) && keysOf(c).length > 0,
    mutants: (_op, c, f) =>
      fc
        .tuple(fc.constantFrom(...keysOf(c, f)), fc.constantFrom(...TOO_DEEP), fc.constantFrom("array" as const, "object" as const))
        .map(([key, levels, kind]) => ({ note: `${key}: ${levels} levels of ${kind}s`, body: withFieldText(c.body!(f), key, deepText(levels, kind)) })),
  },
  {
    name: "a body over MAX_BODY_BYTES",
    applies: hasBody,
    mutants: (_op, c, f) => [{ note: "1.1 MB", body: JSON.stringify({ ...c.body!(f), pad: "x".repeat(1_100_000) }) }],
  },
  {
    name: "a body nested too deep",
    applies: hasBody,
    mutants: () => sample(TOO_DEEP.flatMap((levels) => [{ note: `${levels} arrays`, body: deepText(levels) }, { note: `${levels} objects`, body: deepText(levels, "object") }])),
  },
  {
    name: "an unsafe id in the body",
    applies: (op, c) => hasBody(op, c) && (c.ids ?? []).length > 0,
    mutants: (_op, c, f) => sample((c.ids ?? []).flatMap((key) => UNSAFE_IDS.map((id) => ({ note: `${key} = ${JSON.stringify(id)}`, body: JSON.stringify({ ...c.body!(f), [key]: id }) })))),
  },
  {
    name: "a hand-written bad body",
    applies: (_op, c) => c.badBodies !== undefined,
    mutants: (_op, c, f) => c.badBodies!(f).map((b) => ({ note: JSON.stringify(b).slice(0, 120), body: JSON.stringify(b) })),
  },
  {
    name: "an unsafe id in the path",
    applies: (op) => /\{\w+\}/.test(op.path),
    mutants: (op) => sample([...op.path.matchAll(/\{(\w+)\}/g)].flatMap((m) => UNSAFE_PATH_IDS.map((id) => ({ note: `${m[1]} = ${id.slice(0, 40)}`, params: { [m[1]!]: id } })))),
  },
  {
    name: "a bad query parameter",
    applies: (_op, c) => c.badQuery !== undefined,
    mutants: (_op, c) => [
      ...Object.entries(c.badQuery!).flatMap(([name, values]) => values.map((v) => ({ note: `${name}=${v.slice(0, 40)}`, query: new URLSearchParams({ [name]: v }).toString() }))),
      { note: "an unknown parameter", query: "nope=1" },
      { note: "an unknown parameter next to a good one", query: "limit=1&Limit=2" },
    ],
  },
  {
    name: "a bad Last-Event-ID",
    applies: (op) => op.stream === "sse",
    mutants: () => ["abc", "-1", "1.2.3", "01", "1.0", "1.01", "99999999999999999999", "1e3", "999999", "0x10"].map((id) => ({ note: id, headers: { "last-event-id": id } })),
  },
  {
    name: "a malformed Content-Length",
    applies: () => true,
    mutants: () => sample(["-1", "abc", "1.5", "0x1f", "2, 2", "+3", "1e3"].map((v) => ({ note: v, headers: { "content-length": v } }))),
  },
  {
    name: "an Idempotency-Key too long",
    applies: mutates,
    mutants: () => fc.integer({ min: 256, max: 2_000 }).map((n) => ({ note: `${n} characters`, headers: { "idempotency-key": "k".repeat(n) } })),
  },
  {
    name: "a bad Authorization",
    applies: () => true,
    mutants: (op, c, f) => {
      const bad: Mutant[] = [
        { note: "none", headers: { authorization: null } },
        { note: "Bearer without a token", headers: { authorization: "Bearer" } },
        { note: "Basic", headers: { authorization: "Basic dGVzdDp0ZXN0" } },
        { note: "two tokens", headers: { authorization: `Bearer ${f.s.orch} ${f.s.orch}` } },
        { note: "forged", headers: { authorization: `Bearer ${f.forged}` } },
        { note: "expired", headers: { authorization: `Bearer ${f.expired}` } },
      ];
      if (c.anyToken) return bad;
      bad.push({ note: "another session's orchestrator", headers: { authorization: `Bearer ${f.other.orch}` } });
      // Tokens whose role the operation does not admit (a batch's own token only needs to be in scope: its
      // commands carry theirs).
      if (op.operationId !== "batch") {
        const roleTokens = { admin: f.tokens.admin, orchestrator: f.s.orch, worker: f.worker.token, observer: f.s.observer, approver: f.tokens.approver };
        for (const [role, token] of Object.entries(roleTokens)) {
          if (!op.roles.includes(role as Operation["roles"][number])) bad.push({ note: `the ${role}`, headers: { authorization: `Bearer ${token}` } });
        }
      }
      return bad;
    },
  },
  {
    name: "a method the path does not serve",
    applies: () => true,
    mutants: (op) => {
      const served = new Set(OPERATIONS.filter((o) => o.path === op.path).map((o) => o.method.toUpperCase()));
      return METHODS.filter((m) => !served.has(m)).map((method) => ({ note: method, method, ...(method === "GET" ? { body: undefined } : { body: "{}" }) }));
    },
  },
];

// ---- sending, and what every answer must be ------------------------------------------------------------

/** Counts of what the corpus sent, printed at the end. */
const sent = { requests: 0, batchCommands: 0, frames: 0 };

/** A parsed answer. */
interface Answer {
  status: number;
  body: any;
}

function pathOf(op: Operation, c: RouteCase, f: Fixture, params: Readonly<Record<string, string>> = {}): string {
  const defaults: Record<string, string> = { sid: f.s.sid, tid: f.tid, run: f.worker.run_id, step: op.operationId === "claimStep" ? "c" : "a", action_id: f.actionId, link_id: `lnk_${"0".repeat(26)}`, origin: encodeURIComponent("https://peer.example"), schedule_id: "corpus-none", webhook_id: "corpus-none", delivery_id: "corpus-none" };
  return op.path.replace(/\{(\w+)\}/g, (_m, name: string) => params[name] ?? defaults[name]!);
}

async function send(op: Operation, c: RouteCase, f: Fixture, m: Mutant): Promise<Answer> {
  const method = m.method ?? op.method.toUpperCase();
  const headers: Record<string, string> = { authorization: `Bearer ${f.tokens[c.caller]}`, "content-type": "application/json" };
  for (const [name, value] of Object.entries(m.headers ?? {})) {
    if (value === null) delete headers[name];
    else headers[name] = value;
  }
  const body = "body" in m ? m.body : method === "GET" ? undefined : JSON.stringify(c.body?.(f) ?? {});
  const url = `${BASE}${pathOf(op, c, f, m.params)}${m.query === undefined ? "" : `?${m.query}`}`;
  sent.requests++;
  const res = await SELF.fetch(url, { method, headers, ...(body === undefined || method === "GET" ? {} : { body }) });
  if (res.headers.get("content-type") === "text/event-stream") {
    await res.body?.cancel();
    return { status: res.status, body: "(an event stream)" };
  }
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}

/** A 4xx with exactly the error envelope, a code of the error table, and that code's status. */
function expectRefusal(answer: Answer, what: string): void {
  expect(answer.status, `${what}: ${JSON.stringify(answer.body).slice(0, 300)}`).toBeGreaterThanOrEqual(400);
  expect(answer.status, what).toBeLessThan(500);
  expect(answer.body, what).toEqual({ error: { code: expect.any(String), message: expect.any(String), details: expect.any(Object) } });
  expect(ERROR_CODES, what).toContain(answer.body.error.code);
  expect(STATUS_OF[answer.body.error.code as ErrorCode], what).toBe(answer.status);
}

/** A batch answer that took nothing: refused whole, or every command refused in place. */
function expectBatchRefusal(answer: Answer, what: string): void {
  if (answer.status !== 200) return expectRefusal(answer, what);
  expect(answer.body.results.length, what).toBeGreaterThan(0);
  for (const r of answer.body.results) {
    expect(r.ok, what).toBe(false);
    expectRefusal({ status: r.status, body: r.body }, what);
  }
}

/**
 * What a request changed, as the next check sees it: the task's WAL; for the create routes (`creates`) also
 * the session's task list and the session and task their valid bodies name. Read before any assertion on the
 * answer, so `seen` always moves on.
 */
async function observeWrites(f: Fixture, creates = false): Promise<{ before: Seen; now: Seen }> {
  const now: Seen = { ...seen, seq: await lastSeq(f.t, f.s.orch) };
  if (creates) {
    now.tasks = await taskCount(f.s);
    now.newSession = (await bindings.SESSIONS.get(bindings.SESSIONS.idFromName(NEW_SESSION)).describe()) !== null;
    now.newTask = (await call("GET", `/v1/sessions/${f.s.sid}/tasks/${NEW_TASK}`, f.s.orch)).status !== 404;
  }
  const before = seen;
  seen = now;
  return { before, now };
}

/** Asserts that nothing was written. */
function expectNothingWritten(writes: { before: Seen; now: Seen }, what: string): void {
  expect(writes.now, `${what}: something was written`).toEqual(writes.before);
}

/** A fixed seed per route and kind, so that sampled kinds pick different values on different routes. */
function seedOf(label: string): number {
  let h = SEED;
  for (let i = 0; i < label.length; i++) h = (Math.imul(h, 31) + label.charCodeAt(i)) | 0;
  return h;
}

/** fast-check prints a failing mutant by its note (its body may be a megabyte). */
function printable(m: Mutant): Mutant {
  return Object.assign({ ...m }, { [fc.toStringMethod]: () => `${m.note}${m.body === undefined ? "" : ` (body: ${m.body.length} chars)`}` });
}

/** Runs `check` on every enumerated mutant, or on RUNS mutants generated with the seed of `label`. */
async function forEachMutant(label: string, mutants: readonly Mutant[] | fc.Arbitrary<Mutant>, check: (m: Mutant) => Promise<void>): Promise<void> {
  if (Array.isArray(mutants)) {
    for (const m of mutants) await check(m);
    return;
  }
  const arb = (mutants as fc.Arbitrary<Mutant>).map(printable);
  await fc.assert(fc.asyncProperty(arb, check), { seed: seedOf(label), numRuns: RUNS, endOnFailure: true });
}

/** A sample of an enumerated list of mutants: RUNS of them, picked with the seed. */
const sample = (mutants: readonly Mutant[]): fc.Arbitrary<Mutant> => fc.constantFrom(...mutants);

// ---- the corpus ----------------------------------------------------------------------------------------

const started = Date.now();
afterAll(() => {
  console.log(`bad-input corpus: ${sent.requests} requests, ${sent.batchCommands} batch commands, ${sent.frames} socket frames in ${((Date.now() - started) / 1000).toFixed(1)} s`);
});

describe("the route table", () => {
  it("Should have an entry for every operation of the catalog, and nothing else", () => {
    expect(Object.keys(ROUTES).sort()).toEqual(OPERATIONS.map((op) => op.operationId).sort());
  });

  it.each(OPERATIONS.filter((op) => op.body !== undefined || op.query !== undefined).map((op) => ({ op, id: op.operationId })))(
    "Should start $id from a request its schemas accept, so each mutant is refused for what it changed",
    ({ op }) => {
      const c = ROUTES[op.operationId]!;
      if (op.body !== undefined) expect(op.body.safeParse(c.body!(fx)).success).toBe(true);
      if (op.query !== undefined) expect(op.query.safeParse({}).success).toBe(true);
    },
  );
});

describe.each(OPERATIONS.map((op) => ({ op, route: `${op.method.toUpperCase()} ${op.path}` })))("$route", ({ op }) => {
  const c = ROUTES[op.operationId]!;
  it.each(KINDS.filter((k) => k.applies(op, c)).map((kind) => ({ kind, name: kind.name })))("Should refuse $name with a 4xx error envelope and write nothing", async ({ kind }) => {
    const creates = op.operationId === "createSession" || op.operationId === "createTask";
    await forEachMutant(`${op.operationId} ${kind.name}`, kind.mutants(op, c, fx), async (m) => {
      const what = `${op.operationId} ${kind.name}: ${m.note}`;
      const answer = await send(op, c, fx, m);
      const writes = await observeWrites(fx, creates);
      if (op.operationId === "batch") expectBatchRefusal(answer, what);
      else expectRefusal(answer, what);
      expectNothingWritten(writes, what);
    });
  });
});

describe("a key named __proto__", () => {
  // zod's records drop such a key while strict objects refuse it: inside a batch command it was dropped and
  // the command taken (the corpus found a task failed by one). The edge refuses it wherever it sits.
  const proto = '{"__proto__":{"x":1}}';
  // A route's own body with the key was always refused (its strict schema sees it); the unknown-field kind
  // above keeps sending it there.
  const fail = (f: Fixture) => `${f.t}/fail`;
  const batchOf = (f: Fixture, body: string) => `{"commands":[{"token":"${f.s.orch}","method":"POST","path":"${fail(f)}","body":${body}}]}`;
  it.each([
    { name: "task metadata, nested", path: (f: Fixture) => `/v1/sessions/${f.s.sid}/tasks`, token: (f: Fixture) => f.s.orch, body: () => `{"task_id":"${NEW_TASK}","wal_name":"${NEW_TASK}","title":"T","steps":[],"metadata":{"a":${proto}}}` },
    { name: "session metadata", path: () => "/v1/sessions", token: () => ADMIN, body: () => `{"session_id":"${NEW_SESSION}","metadata":${proto}}` },
    { name: "a batch command's body", path: (f: Fixture) => `${f.t}/batch`, token: (f: Fixture) => f.s.orch, body: (f: Fixture) => batchOf(f, proto) },
    { name: "a batch command's body, escaped", path: (f: Fixture) => `${f.t}/batch`, token: (f: Fixture) => f.s.orch, body: (f: Fixture) => batchOf(f, '{"\\u005f\\u005fproto__":{"x":1}}') },
  ])("Should refuse it in $name with 400 validation_error and write nothing", async ({ path, token, body }) => {
    sent.requests++;
    const res = await SELF.fetch(`${BASE}${path(fx)}`, { method: "POST", headers: { authorization: `Bearer ${token(fx)}`, "content-type": "application/json" }, body: body(fx) });
    const answer = { status: res.status, body: await res.json() };
    const writes = await observeWrites(fx, true);
    expectRefusal(answer, "__proto__");
    expect(answer.status).toBe(400);
    expectNothingWritten(writes, "__proto__");
  });

  it("Should refuse it in a socket frame's command body with a 400 frame and write nothing", async () => {
    const socket = await openSocket(fx.t, fx.s.orch);
    sent.frames++;
    const answer = await socket.ask(`{"id":1,"commands":[{"token":"${fx.s.orch}","method":"POST","path":"${fail(fx)}","body":${proto}}]}`);
    socket.ws.close();
    const writes = await observeWrites(fx);
    expect(answer).toMatchObject({ status: 400, error: { code: "validation_error" } });
    expectNothingWritten(writes, "__proto__ in a frame");
  });
});

// ---- batch commands and socket frames ---------------------------------------------------------------------

/** The task writes a batch command or a socket frame may carry. */
const WRITES = OPERATIONS.filter((op) => op.path.startsWith("/v1/sessions/{sid}/tasks/{tid}") && op.method !== "get" && op.operationId !== "batch");

/** The JSON text of one command: a write of `op` with `bodyText` as its body (and any field overridden). */
function commandText(op: Operation, f: Fixture, bodyText: string, override: Record<string, unknown> = {}): string {
  const c = ROUTES[op.operationId]!;
  const command = { token: f.tokens[c.caller], method: op.method.toUpperCase(), path: pathOf(op, c, f), ...override };
  return withFieldText(command, "body", bodyText);
}

/** A bad command's JSON text and what is bad in it (which is also how fast-check prints it). */
function command(note: string, text: string): { note: string; text: string } {
  return Object.assign({ note, text }, { [fc.toStringMethod]: () => note });
}

/** Bad commands of one write: its route's body mutants, and commands wrong in their own fields. */
function badCommandArb(op: Operation, f: Fixture): fc.Arbitrary<{ note: string; text: string }> {
  const c = ROUTES[op.operationId]!;
  const valid = JSON.stringify(c.body!(f));
  const bodyKinds = KINDS.filter((k) => k.applies(op, c) && ["a field of the wrong type", "an unknown field", "a field too long", "a field nested too deep", "a body that is not an object", "an unsafe id in the body", "a hand-written bad body"].includes(k.name));
  const fromBodies = bodyKinds.map((k) => {
    const mutants = k.mutants(op, c, f);
    const arb = Array.isArray(mutants) ? fc.constantFrom(...(mutants as Mutant[])) : (mutants as fc.Arbitrary<Mutant>);
    // A body nested past MAX_DOCUMENT_DEPTH makes the whole batch too deep: refused whole, which is also a refusal.
    return arb.map((m) => command(`${k.name}: ${m.note}`, commandText(op, f, m.body!)));
  });
  const step = pathOf(op, c, f).match(/\/steps\/([^/]+)\//)?.[1];
  const own = fc.constantFrom<{ note: string; override: Record<string, unknown> }>(
    { note: "GET", override: { method: "GET" } },
    { note: "put", override: { method: "put" } },
    { note: "a path outside the task", override: { path: `/v1/sessions/${f.s.sid}/tasks/elsewhere/steps/a/claim` } },
    { note: "a path in another session", override: { path: `/v1/sessions/${f.other.sid}/tasks/${f.tid}/steps/a/claim` } },
    { note: "an unknown write", override: { path: `${f.t}/steps/a/explode` } },
    { note: "an unsafe step id", override: { path: `${f.t}/steps/..%2F..%2Fx/claim` } },
    { note: "a malformed percent-encoding", override: { path: `${f.t}/steps/%ZZ/claim` } },
    { note: "a unicode run id", override: { path: `${f.t}/runs/%F0%9F%98%80/finish` } },
    { note: "a forged token", override: { token: f.forged } },
    { note: "an expired token", override: { token: f.expired } },
    { note: "another session's token", override: { token: f.other.orch } },
    { note: "the observer's token", override: { token: f.s.observer } },
    ...(op.operationId === "respondAction" ? [] : [{ note: "the approver's token", override: { token: f.tokens.approver } }]),
    { note: "an Idempotency-Key too long", override: { idempotency_key: "k".repeat(256) } },
    { note: "an unknown field", override: { extra: 1 } },
    ...(step === undefined ? [] : [{ note: "a step the caller does not hold", override: { path: pathOf(op, c, f).replace(`/steps/${step}/`, "/steps/b/") } }]),
  );
  const fromCommand = own.map(({ note, override }) => command(note, commandText(op, f, valid, override)));
  return fc.oneof(...fromBodies, fromCommand);
}

describe("POST .../batch, command by command", () => {
  it.each(WRITES.map((op) => ({ op, route: `${op.method.toUpperCase()} ${op.path}` })))(
    "Should refuse each bad command for $route in place (or the batch whole) and write nothing",
    async ({ op }) => {
      await fc.assert(
        fc.asyncProperty(fc.array(badCommandArb(op, fx), { minLength: 1, maxLength: 3 }), async (commands) => {
          const what = `batch of ${commands.map((x) => x.note).join(" | ")}`;
          sent.requests++;
          sent.batchCommands += commands.length;
          const res = await SELF.fetch(`${BASE}${fx.t}/batch`, {
            method: "POST",
            headers: { authorization: `Bearer ${fx.worker.token}`, "content-type": "application/json" },
            body: `{"commands":[${commands.map((x) => x.text).join(",")}]}`,
          });
          const answer = { status: res.status, body: await res.json() };
          const writes = await observeWrites(fx);
          expectBatchRefusal(answer, what);
          expectNothingWritten(writes, what);
        }),
        { seed: seedOf(`batch ${op.operationId}`), numRuns: 2 * RUNS, endOnFailure: true },
      );
    },
  );
});

describe("the command socket, frame by frame", () => {
  let socket: TestSocket;
  beforeAll(async () => {
    socket = await openSocket(fx.t, fx.s.orch);
  });
  afterAll(() => socket.ws.close());

  /** A frame answer that took nothing: refused whole (its own status and envelope), or every command refused. */
  function expectFrameRefusal(answer: any, what: string): void {
    if ("results" in answer) return expectBatchRefusal({ status: 200, body: answer }, what);
    const { status, id: _id, ...envelope } = answer;
    expectRefusal({ status, body: envelope }, what);
  }

  const valid = (f: Fixture) => ({ id: 1, commands: [{ token: f.worker.token, method: "POST", path: `${f.t}/steps/a/progress`, body: { phase: "p" } }] });

  it.each([
    { name: "malformed JSON", frames: (f: Fixture) => [JSON.stringify(valid(f)).slice(0, 30), `${JSON.stringify(valid(f))}}`, "{id:1}", ""] },
    { name: "a frame that is not an object", frames: () => ["[]", "1", '"s"', "null"] },
    {
      name: "a frame of the wrong shape",
      frames: (f: Fixture) => {
        const v = valid(f);
        return [{ ...v, id: {} }, { ...v, id: "" }, { ...v, id: "x".repeat(129) }, { ...v, id: 1.5 }, { ...v, commands: {} }, { ...v, commands: [] }, { ...v, commands: Array.from({ length: 257 }, () => v.commands[0]) }, { ...v, extra: 1 }, { commands: v.commands }].map((x) => JSON.stringify(x));
      },
    },
    { name: "a frame nested too deep", frames: () => TOO_DEEP.filter((n) => n > MAX_DOCUMENT_DEPTH).flatMap((n) => [deepText(n), `{"id":1,"commands":[{"token":"t","method":"POST","path":"p","body":${deepText(n, "object")}}]}`]) },
    { name: "a frame over MAX_BODY_BYTES", frames: (f: Fixture) => [JSON.stringify({ ...valid(f), pad: "x".repeat(1_100_000) })] },
    { name: "a binary frame", frames: () => [new Uint8Array([123, 125])] },
  ])("Should refuse $name with a 4xx error frame, write nothing and keep the socket open", async ({ frames }) => {
    for (const frame of frames(fx)) {
      const what = `socket frame ${typeof frame === "string" ? frame.slice(0, 80) : "(binary)"}`;
      sent.frames++;
      const answer = await socket.ask(frame);
      const writes = await observeWrites(fx);
      expectFrameRefusal(answer, what);
      expectNothingWritten(writes, what);
    }
  });

  it.each(WRITES.map((op) => ({ op, route: `${op.method.toUpperCase()} ${op.path}` })))("Should refuse each bad command for $route in place and write nothing", async ({ op }) => {
    await fc.assert(
      fc.asyncProperty(fc.array(badCommandArb(op, fx), { minLength: 1, maxLength: 3 }), async (commands) => {
        const what = `socket frame of ${commands.map((x) => x.note).join(" | ")}`;
        sent.frames++;
        sent.batchCommands += commands.length;
        const answer = await socket.ask(`{"id":"corpus","commands":[${commands.map((x) => x.text).join(",")}]}`);
        const writes = await observeWrites(fx);
        expectFrameRefusal(answer, what);
        expectNothingWritten(writes, what);
      }),
      { seed: seedOf(`socket ${op.operationId}`), numRuns: RUNS, endOnFailure: true },
    );
  });
});
