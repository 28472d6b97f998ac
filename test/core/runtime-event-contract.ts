/** @module The Agent Runtime draft's published schemas (vendored in test/fixtures/agentruntime-schemas/), compiled with ajv. */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { expect } from "vitest";
import { projectWal, type RuntimeEvent, RuntimeEventSchema, type WalEvent } from "../../src/core/index.js";

const here = dirname(fileURLToPath(import.meta.url));
/** Where the published schemas sit: vendored in the repository, with their origin and hashes in its README. */
export const SCHEMA_DIR = resolve(here, "../fixtures/agentruntime-schemas");

function compile(file: string) {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  return ajv.compile(JSON.parse(readFileSync(resolve(SCHEMA_DIR, file), "utf8")));
}

/** Validates against agentruntime-event.schema.json. */
export const validateRuntimeEvent = compile("agentruntime-event.schema.json");
/** Validates against agentruntime-snapshot.schema.json. */
export const validateSnapshot = compile("agentruntime-snapshot.schema.json");

/** Projects a WAL and checks every runtime event against the published schema and our own envelope schema. */
export function expectConformingProjection(wal: readonly WalEvent[]): RuntimeEvent[] {
  const events = projectWal(wal);
  const ids = new Set<string>();
  for (const event of events) {
    const valid: boolean = validateRuntimeEvent(event);
    if (!valid) {
      expect.fail(`${event.type} #${event.sequence} breaks the published schema: ${JSON.stringify(validateRuntimeEvent.errors)}`);
    }
    const own = RuntimeEventSchema.safeParse(event);
    if (!own.success) expect.fail(`${event.type} #${event.sequence} breaks the envelope schema: ${own.error.message}`);
    expect(ids.has(event.eventId), `eventId ${event.eventId} is unique`).toBe(false);
    ids.add(event.eventId);
  }
  return events;
}
