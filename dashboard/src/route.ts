/** @module The dashboard's routes, in the fragment after the token is gone: `#/` the session, `#/tasks/<id>` a task. */

/** Where the viewer is. */
export type Route = { readonly view: "session" } | { readonly view: "task"; readonly taskId: string };

/**
 * The route of a fragment (anything unknown is the session view). A viewer scoped to one task (a worker, whose
 * token reads nothing session-wide) is always on that task.
 */
export function routeOf(hash: string, ownTask: string | null = null): Route {
  if (ownTask !== null) return { view: "task", taskId: ownTask };
  const match = /^#\/tasks\/([a-z0-9_-]{1,64})/.exec(hash);
  return match === null ? { view: "session" } : { view: "task", taskId: match[1]! };
}

/** The fragment of a task's view. */
export function taskHref(taskId: string): string {
  return `#/tasks/${taskId}`;
}
