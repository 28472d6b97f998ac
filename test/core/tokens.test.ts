import { sign } from "hono/jwt";
import { describe, expect, it } from "vitest";
import { mintToken, verifyToken } from "../../durable-objects/shared/tokens.js";

const claims = { role: "worker" as const, sid: "s1", sub: "w1", run: "run_1", tid: "t1" };

describe("verifyToken", () => {
  it("Should accept a token minted with the secret, again from its cache", async () => {
    const { token } = await mintToken("secret-a", claims, Date.now(), 60);
    expect(await verifyToken("secret-a", token)).toMatchObject(claims);
    expect(await verifyToken("secret-a", token)).toMatchObject(claims);
  });

  it("Should refuse a cached token with another secret", async () => {
    const { token } = await mintToken("secret-b", claims, Date.now(), 60);
    expect(await verifyToken("secret-b", token)).not.toBeNull();
    expect(await verifyToken("secret-c", token)).toBeNull();
  });

  it("Should refuse a cached token once it has expired", async () => {
    const now = Date.now();
    const { token } = await mintToken("secret-d", claims, now, 60);
    expect(await verifyToken("secret-d", token, now)).not.toBeNull();
    expect(await verifyToken("secret-d", token, now + 61_000)).toBeNull();
  });

  it("Should refuse forged and malformed tokens", async () => {
    const forged = await sign({ ...claims, iat: 0, exp: Math.floor(Date.now() / 1000) + 60 }, "other-secret", "HS256");
    expect(await verifyToken("secret-e", forged)).toBeNull();
    expect(await verifyToken("secret-e", "not.a.token")).toBeNull();
  });
});
