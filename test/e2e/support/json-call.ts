/** @module A JSON call over real HTTP for the e2e tests, which must answer one status. */

/** Calls `base + path` with the token (and a JSON body); answers the parsed body, or throws when the status differs. */
export async function mustAnswer(base: string, status: number, method: string, path: string, token: string, body?: unknown): Promise<any> {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  if (res.status !== status) throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 300)}`);
  return text === "" ? null : JSON.parse(text);
}
