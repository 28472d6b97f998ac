/** @module The dashboard's routes, in the fragment after the token is gone: `#/` the session, `#/tasks/<id>` a task. */

/** Where the viewer is. */
export type Route = { readonly view: "session" } | { readonly view: "task"; readonly taskId: string };

/** The route of a fragment (anything unknown is the session view). */
export function routeOf(hash: string): Route {
  const match = /^#\/tasks\/([a-z0-9_-]{1,64})/.exec(hash);
  return match === null ? { view: "session" } : { view: "task", taskId: match[1]! };
}

/** The fragment of a task's view. */
export function taskHref(taskId: string): string {
  return `#/tasks/${taskId}`;
}
