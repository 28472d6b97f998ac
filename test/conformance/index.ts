/** @module The task model's rules (DAG, statuses, ownership, permissions, tools; then pause, retry and human actions) as one conformance suite run against any TaskRuntimeDriver. */
import { runDagModel } from "./dag-model.js";
import type { MakeDriver } from "./drivers/driver.js";
import { runLifecycleActions } from "./lifecycle-actions.js";
import { runLifecyclePause } from "./lifecycle-pause.js";
import { runLifecycleRetry } from "./lifecycle-retry.js";
import { runOrchestratorOwnership } from "./orchestrator-ownership.js";
import { runPermission } from "./permission.js";
import { runStatus } from "./status.js";
import { runTaskTools } from "./task-tools/task-tools.js";

/** Registers every section of the suite against the drivers `makeDriver` makes. */
export function runConformance(makeDriver: MakeDriver): void {
  runDagModel(makeDriver);
  runStatus(makeDriver);
  runTaskTools(makeDriver);
  runOrchestratorOwnership(makeDriver);
  runPermission(makeDriver);
  runLifecyclePause(makeDriver);
  runLifecycleActions(makeDriver);
  runLifecycleRetry(makeDriver);
}
