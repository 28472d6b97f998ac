/**
 * @module The viewer's token: it arrives in the URL fragment (`/#token=…`, never a query string, so it is neither
 * sent to the server with the page request nor written to access logs), is kept in session storage for the tab,
 * and the fragment is replaced at once so it does not stay in the address bar or the history.
 */

/** Where the token is kept for this tab. */
export const TOKEN_KEY = "agent-task-runtime.token";

/** Who is looking: the token and what its claims say (the server checks the signature; this only reads them). */
export interface Viewer {
  readonly token: string;
  readonly sessionId: string;
  readonly role: string;
  readonly agentId: string;
  /** A worker's one task (its token reads nothing else of the session), or null for the other roles. */
  readonly taskId: string | null;
}

/** The claims of a token, read without checking its signature (the server does that on every call). */
export function viewerOf(token: string): Viewer | null {
  const part = token.split(".")[1];
  if (part === undefined) return null;
  try {
    const json = atob(part.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(part.length / 4) * 4, "="));
    const claims = JSON.parse(json) as { sid?: unknown; role?: unknown; sub?: unknown; tid?: unknown };
    if (typeof claims.sid !== "string" || typeof claims.role !== "string") return null;
    const taskId = claims.role === "worker" && typeof claims.tid === "string" ? claims.tid : null;
    return { token, sessionId: claims.sid, role: claims.role, agentId: typeof claims.sub === "string" ? claims.sub : "", taskId };
  } catch {
    return null;
  }
}

/** The token of `hash` (`#token=…`, possibly followed by `&…`), or null. */
export function tokenInFragment(hash: string): string | null {
  const match = /^#token=([^&]+)/.exec(hash);
  return match === null ? null : decodeURIComponent(match[1]!);
}

/** Where a link with a token goes once the token is taken: `#token=…&to=/tasks/<id>` opens that task. */
export function routeAfterToken(hash: string): string {
  const match = /[#&]to=(\/[a-z0-9_/-]*)/.exec(hash);
  return match === null ? "/" : match[1]!;
}

/**
 * Takes the token from the fragment (storing it and replacing the fragment by the route it names, `#/` by default)
 * or from session storage; null when the tab has none.
 */
export function takeViewer(location: Location, storage: Storage, history: History): Viewer | null {
  const fresh = tokenInFragment(location.hash);
  if (fresh !== null) {
    storage.setItem(TOKEN_KEY, fresh);
    history.replaceState(null, "", `${location.pathname}#${routeAfterToken(location.hash)}`);
  }
  const token = fresh ?? storage.getItem(TOKEN_KEY);
  return token === null ? null : viewerOf(token);
}
