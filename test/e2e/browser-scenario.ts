/**
 * The page side of browser-client.test.ts: bundled for the browser with the SDK and loaded by a page on
 * another origin than the service. `runScenario` drives a fan-out/fan-in DAG to completion with pooled
 * workers (group commits over the browser's WebSocket) while `subscribe()` streams the task's events.
 */
import { isRuntimeApiError, RuntimeClient } from "../../src/client/index.js";

/** What the page reports back to the test. */
export interface BrowserRun {
  completed: string[];
  status: string;
  eventTypes: string[];
  sockets: number;
  batchRequests: number;
  conflictCode: string | null;
}

async function runScenario(base: string, admin: string): Promise<BrowserRun> {
  // Count what the SDK opens through the page's own WebSocket and fetch (wrapped before any client exists).
  let sockets = 0;
  let batchRequests = 0;
  const NativeWebSocket = globalThis.WebSocket;
  globalThis.WebSocket = class extends NativeWebSocket {
    constructor(...args: ConstructorParameters<typeof WebSocket>) {
      super(...args);
      sockets++;
    }
  };
  const nativeFetch = globalThis.fetch.bind(globalThis);
  globalThis.fetch = (input: RequestInfo | URL, init?: RequestInit) => {
    if (String(input instanceof Request ? input.url : input).endsWith("/batch")) batchRequests++;
    return nativeFetch(input, init);
  };

  const root = new RuntimeClient({ baseUrl: base, token: admin, socket: true });
  const session = await root.createSession({});
  const orch = root.withToken(session.orchestrator.token);
  const research = ["a", "b", "c", "d", "e", "f"];
  const steps = [
    ...research.map((id) => ({ step_id: id, title: `Research ${id}`, summary: "", depends_on_step_ids: [] as string[] })),
    { step_id: "synthesis", title: "Synthesis", summary: "", depends_on_step_ids: research },
  ];
  await orch.createTask(session.session_id, { task_id: "browser", wal_name: "browser", title: "From a browser", summary: "", steps });
  const task = { sessionId: session.session_id, taskId: "browser" };
  const eventTypes: string[] = [];
  const watching = (async () => {
    for await (const e of orch.subscribe(task, { afterSeq: 0 })) eventTypes.push(e.type);
  })();
  const workers = await Promise.all([1, 2, 3].map((n) => orch.dispatchWorker(task, { agent_id: `browser-w${n}`, max_steps: 7 })));
  const reports = await Promise.all(
    workers.map((w) =>
      w.run(async (step, ctx) => {
        await ctx.progress({ phase: "working", summary: step.step_id });
        return { result_summary: `${step.step_id} done in a browser` };
      }),
    ),
  );
  await orch.completeTask(task);
  await watching;
  const view = await orch.getTask(task);
  let conflictCode: string | null = null;
  try {
    await orch.completeTask(task);
  } catch (e) {
    conflictCode = isRuntimeApiError(e) ? e.code : "not a RuntimeApiError";
  }
  root.close();
  return { completed: reports.flatMap((r) => r.completed).sort(), status: view.task.status, eventTypes, sockets, batchRequests, conflictCode };
}

(globalThis as { runScenario?: typeof runScenario }).runScenario = runScenario;
