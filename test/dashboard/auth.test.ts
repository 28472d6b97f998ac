/** The dashboard's token handling: from the URL fragment to session storage, never kept in the address. */
import { describe, expect, it } from "vitest";
import { routeAfterToken, takeViewer, TOKEN_KEY, tokenInFragment, viewerOf } from "../../dashboard/src/auth.js";
import { routeOf, taskHref } from "../../dashboard/src/route.js";

const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
const token = `${b64({ alg: "HS256" })}.${b64({ role: "observer", sid: "sess_1", sub: "dash" })}.sig`;

function memoryStorage(): Storage {
  const m = new Map<string, string>();
  return { getItem: (k) => m.get(k) ?? null, setItem: (k, v) => void m.set(k, v), removeItem: (k) => void m.delete(k), clear: () => m.clear(), key: () => null, get length() { return m.size; } } as Storage;
}

describe("the dashboard's token", () => {
  it("Should read the token from #token=, keep it in session storage and replace the fragment", () => {
    const storage = memoryStorage();
    const replaced: string[] = [];
    const viewer = takeViewer({ hash: `#token=${token}`, pathname: "/" } as Location, storage, { replaceState: (_s: unknown, _t: string, url: string) => void replaced.push(url) } as unknown as History);
    expect(viewer).toMatchObject({ token, sessionId: "sess_1", role: "observer", agentId: "dash" });
    expect(storage.getItem(TOKEN_KEY)).toBe(token);
    expect(replaced).toEqual(["/#/"]);
    // The next load of the tab finds it in session storage.
    expect(takeViewer({ hash: "#/", pathname: "/" } as Location, storage, { replaceState: () => undefined } as unknown as History)?.token).toBe(token);
  });

  it("Should go to the route a link names after its token (#token=…&to=/tasks/<id>), the session by default", () => {
    const replaced: string[] = [];
    const history = { replaceState: (_s: unknown, _t: string, url: string) => void replaced.push(url) } as unknown as History;
    takeViewer({ hash: `#token=${token}&to=/tasks/report-1`, pathname: "/" } as Location, memoryStorage(), history);
    expect(replaced).toEqual(["/#/tasks/report-1"]);
    expect(routeAfterToken("#token=abc")).toBe("/");
    expect(routeAfterToken("#token=abc&to=javascript:alert(1)")).toBe("/");
  });

  it("Should answer null for no token, a malformed one, and a fragment without one", () => {
    expect(takeViewer({ hash: "#/", pathname: "/" } as Location, memoryStorage(), {} as History)).toBeNull();
    expect(viewerOf("not-a-token")).toBeNull();
    expect(viewerOf(`x.${b64({ role: "observer" })}.y`)).toBeNull();
    expect(tokenInFragment("#/tasks/a")).toBeNull();
  });

  it("Should route #/tasks/<id> to the task view and anything else to the session", () => {
    expect(routeOf(taskHref("report-1"))).toEqual({ view: "task", taskId: "report-1" });
    expect(routeOf("#/")).toEqual({ view: "session" });
    expect(routeOf("#/tasks/BAD!")).toEqual({ view: "session" });
  });

  it("Should keep a worker, whose token reads only its own task, on that task's view whatever the fragment", () => {
    const worker = viewerOf(`x.${b64({ role: "worker", sid: "sess_1", sub: "w1", tid: "report-1", run: "run_1" })}.y`)!;
    expect(worker.taskId).toBe("report-1");
    expect(viewerOf(token)!.taskId).toBeNull();
    for (const hash of ["#/", "", "#/tasks/other-task"]) expect(routeOf(hash, worker.taskId)).toEqual({ view: "task", taskId: "report-1" });
  });
});
