/**
 * @module A2A ListTasks through the official @a2a-js/sdk client: a client lists only the tasks it submitted,
 * newest status first, in pages whose token is empty on the last one, filtered by context and by A2A state (the
 * same state GetTask gives each task).
 */
import { type ListTasksRequest, type Task, TaskState } from "@a2a-js/sdk";
import type { Client } from "@a2a-js/sdk/client";
import { beforeAll, describe, expect, it } from "vitest";
import { connectA2a, send } from "../support/a2a-clients.js";
import { call, newSession, step, type TestSession } from "../support/helpers.js";
import { eventually, expectOk, mintRole } from "../support/support.js";

let S: TestSession;
let client: Client;
let other: Client;
/** The client's tasks in the order they were submitted, and the other client's one. */
const mine: Task[] = [];
let theirs: Task;

const list = (over: Partial<ListTasksRequest> = {}): ListTasksRequest => ({ tenant: "", contextId: "", status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: "", statusTimestampAfter: undefined, ...over });
const idsOf = (tasks: Task[]) => tasks.map((t) => t.id);

async function submit(c: Client, text: string, contextId = ""): Promise<Task> {
  return (await c.sendMessage(send(text, { contextId }, { returnImmediately: true }))) as Task;
}

beforeAll(async () => {
  S = await newSession();
  client = await connectA2a(await mintRole(S, "a2a_client", "lister"));
  other = await connectA2a(await mintRole(S, "a2a_client", "bystander"));
  for (const [i, ctx] of ["ctx-a", "ctx-b", "ctx-a", "ctx-b", "ctx-a"].entries()) mine.push(await submit(client, `job ${i}`, ctx));
  theirs = await submit(other, "their job", "ctx-a");
  // The orchestrator takes the second task up (WORKING), the fourth asks a question (INPUT_REQUIRED); the client cancels the first.
  const path = (t: Task) => `/v1/sessions/${S.sid}/tasks/${t.id}`;
  expectOk(await call("PATCH", path(mine[1]!), S.orch, { ops: [{ op: "add_step", step: step("work") }] }));
  expectOk(await call("POST", `${path(mine[3]!)}/actions`, S.orch, { kind: "input", prompt: "Which quarter?" }), 201);
  await client.cancelTask({ tenant: "", id: mine[0]!.id, metadata: undefined });
  // The session's index catches up with the task objects.
  await eventually(async () => {
    const page = await client.listTasks(list({ pageSize: 100 }));
    expect(page.tasks.find((t) => t.id === mine[0]!.id)?.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(page.tasks.find((t) => t.id === mine[3]!.id)?.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
  });
});

describe("ListTasks", () => {
  it("Should list only the client's own tasks, newest status first, each as GetTask gives it", async () => {
    const page = await client.listTasks(list());
    expect(page.totalSize).toBe(5);
    expect(idsOf(page.tasks).sort()).toEqual(idsOf(mine).sort());
    expect(idsOf(page.tasks)).not.toContain(theirs.id);
    const stamps = page.tasks.map((t) => Date.parse(String(t.status?.timestamp)));
    expect(stamps).toEqual([...stamps].sort((a, b) => b - a));
    // The cancelled task changed last, so it leads.
    expect(page.tasks[0]!.id).toBe(mine[0]!.id);
    for (const t of page.tasks) {
      const got = await client.getTask({ tenant: "", id: t.id, historyLength: undefined });
      expect(t.status?.state, t.id).toBe(got.status?.state);
    }
    expect(page.nextPageToken).toBe("");
  });

  it("Should page with tokens: every task once, and an empty token on the last page", async () => {
    const seen: string[] = [];
    let token = "";
    let pages = 0;
    do {
      const page = await client.listTasks(list({ pageSize: 2, pageToken: token }));
      expect(page.tasks.length).toBeLessThanOrEqual(2);
      seen.push(...idsOf(page.tasks));
      token = page.nextPageToken;
      pages += 1;
    } while (token !== "" && pages < 10);
    expect(pages).toBe(3);
    expect(seen.sort()).toEqual(idsOf(mine).sort());
  });

  it("Should filter by contextId", async () => {
    const page = await client.listTasks(list({ contextId: "ctx-b" }));
    expect(idsOf(page.tasks).sort()).toEqual([mine[1]!.id, mine[3]!.id].sort());
    expect(page.totalSize).toBe(2);
  });

  it.each([
    [TaskState.TASK_STATE_SUBMITTED, [2, 4]],
    [TaskState.TASK_STATE_WORKING, [1]],
    [TaskState.TASK_STATE_INPUT_REQUIRED, [3]],
    [TaskState.TASK_STATE_CANCELED, [0]],
    [TaskState.TASK_STATE_COMPLETED, []],
  ])("Should filter by state %s across pages, with the total of that state", async (state, indexes) => {
    const page = await client.listTasks(list({ status: state, pageSize: 1 }));
    expect(page.totalSize).toBe(indexes.length);
    const all = [...page.tasks];
    let token = page.nextPageToken;
    while (token !== "") {
      const next = await client.listTasks(list({ status: state, pageSize: 1, pageToken: token }));
      all.push(...next.tasks);
      token = next.nextPageToken;
    }
    expect(idsOf(all).sort()).toEqual(indexes.map((i) => mine[i]!.id).sort());
    for (const t of all) expect(t.status?.state).toBe(state);
  });

  it("Should refuse a page token of another client's list", async () => {
    const page = await other.listTasks(list({ pageSize: 1 }));
    // The other client has one task: no next page. Make one with two of its own.
    await submit(other, "their second job");
    const first = await eventually(async () => {
      const p = await other.listTasks(list({ pageSize: 1 }));
      expect(p.nextPageToken).not.toBe("");
      return p;
    });
    expect(page.totalSize).toBe(1);
    await expect(client.listTasks(list({ pageSize: 1, pageToken: first.nextPageToken }))).rejects.toThrow();
  });
});
