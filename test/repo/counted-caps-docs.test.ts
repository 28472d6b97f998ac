/**
 * The counted caps' defaults are what docs/limits.md "Counted caps" says, in the code (readConfig of no vars) and
 * in wrangler.toml's [vars] alike.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { type Env, readConfig } from "../../durable-objects/shared/env.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const read = (file: string): string => readFileSync(`${ROOT}${file}`, "utf8");

/** The rows `| \`VAR\` | 1,000 | …` of the doc's "Counted caps" section → var: default. */
function documentedDefaults(doc: string): Map<string, number> {
  const section = /^## Counted caps$([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(doc)?.[1] ?? "";
  return new Map([...section.matchAll(/^\|\s*`([A-Z0-9_]+)`\s*\|\s*([\d,]+)\s*\|/gm)].map((m) => [m[1]!, Number(m[2]!.replaceAll(",", ""))]));
}

describe("counted caps in docs/limits.md", () => {
  it("Should document each cap with the default the code and wrangler.toml use", () => {
    const config = readConfig({} as Env);
    const inCode: Record<string, number> = {
      MAX_TASKS_PER_SESSION: config.caps.tasksPerSession,
      MAX_TASKS_PER_A2A_CLIENT: config.caps.tasksPerA2aClient,
      MAX_OPEN_ACTIONS_PER_TASK: config.limits.maxOpenActionsPerTask,
      MAX_ACTIONS_PER_ATTEMPT: config.limits.maxActionsPerAttempt,
      MAX_CHILDREN_PER_STEP: config.limits.maxChildrenPerStep,
      MAX_LINKS_PER_TASK: config.caps.linksPerTask,
      MCP_MAX_BATCH: config.caps.mcpBatch,
      MAX_SCHEDULES_PER_SESSION: config.caps.schedulesPerSession,
    };
    const documented = documentedDefaults(read("docs/limits.md"));
    expect(Object.fromEntries(documented)).toEqual(inCode);
    expect(inCode).toEqual({
      MAX_TASKS_PER_SESSION: 100_000,
      MAX_TASKS_PER_A2A_CLIENT: 10_000,
      MAX_OPEN_ACTIONS_PER_TASK: 1_000,
      MAX_ACTIONS_PER_ATTEMPT: 100,
      MAX_CHILDREN_PER_STEP: 100,
      MAX_LINKS_PER_TASK: 1_000,
      MCP_MAX_BATCH: 16,
      MAX_SCHEDULES_PER_SESSION: 100,
    });
    const toml = read("wrangler.toml");
    for (const [name, value] of Object.entries(inCode)) expect(new RegExp(`^${name} = "${value}"$`, "m").test(toml), name).toBe(true);
  });
});
