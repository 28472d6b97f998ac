/**
 * A session object's writes of requests that arrive together (write-batch.ts): they run in order in one turn, so
 * they commit together; each caller gets its own result; one that throws leaves nothing written and does not undo
 * the others.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { WriteBatch } from "../../durable-objects/session/write-batch.js";
import { bindings, uniqueId } from "../support/support.js";

const sessionStub = (name: string) => bindings.SESSIONS.get(bindings.SESSIONS.idFromName(name));

describe("WriteBatch", () => {
  it("Should run requests sent together in order in one turn, each answered with its own result", async () => {
    const ran: number[] = [];
    const batch = new WriteBatch((work) => work());
    const answers = Array.from({ length: 5 }, (_, i) => batch.run(() => {
      ran.push(i);
      return i * 10;
    }));
    // None has run yet: the batch waits one turn for the others.
    expect(ran).toEqual([]);
    // The first answer arrives only after every request of the batch ran (one turn, no await between them).
    await Promise.race(answers);
    expect(ran).toEqual([0, 1, 2, 3, 4]);
    expect(await Promise.all(answers)).toEqual([0, 10, 20, 30, 40]);
    // A later request starts a batch of its own.
    expect(await batch.run(() => "later")).toBe("later");
    expect(ran).toEqual([0, 1, 2, 3, 4]);
  });

  it("Should leave nothing of a request that throws and keep the writes of the others in its batch", async () => {
    const rows = await runInDurableObject(sessionStub(uniqueId("batch")), async (_o, state) => {
      const sql = state.storage.sql;
      sql.exec("CREATE TABLE batch_rows (name TEXT NOT NULL)");
      const batch = new WriteBatch((work) => state.storage.transactionSync(work));
      const insert = (name: string, fail = false) => batch.run(() => {
        sql.exec("INSERT INTO batch_rows (name) VALUES (?)", name);
        if (fail) throw new Error(`refused ${name}`);
        return name;
      });
      const results = await Promise.allSettled([insert("a"), insert("b", true), insert("c")]);
      expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
      expect((results[1] as PromiseRejectedResult).reason.message).toBe("refused b");
      return sql.exec<{ name: string }>("SELECT name FROM batch_rows ORDER BY rowid").toArray().map((r) => r.name);
    });
    expect(rows).toEqual(["a", "c"]);
  });
});
