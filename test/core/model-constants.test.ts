/**
 * @module The model's plain lists (read by browsers, without zod) say what the zod schemas say: the same names in
 * the same order, and the same types. The type checks fail `npm run typecheck`; the lists fail here.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import {
  ATTEMPT_STATUSES,
  type AttemptStatus,
  AttemptStatusSchema,
  type Delegation,
  DELEGATION_STATUSES,
  DelegationSchema,
  type DelegationStatus,
  RUN_STATUSES,
  type RunStatus,
  RunStatusSchema,
  RUNTIME_EVENT_TYPES,
  type RuntimeEvent,
  STEP_STATUSES,
  type StepStatus,
  StepStatusSchema,
  TASK_RECORD_FIELDS,
  TASK_STATUSES,
  type TaskRecordFields,
  TaskRecordFieldsSchema,
  type TaskStatus,
  TaskStatusSchema,
  WAL_EVENT_TYPES,
  type WalEventType,
  WalEventSchema,
} from "../../src/core/index.js";

describe("the model's plain lists", () => {
  it("Should name the task record fields in the order of the task record schema", () => {
    expect(TASK_RECORD_FIELDS).toEqual(Object.keys(TaskRecordFieldsSchema.shape));
    expectTypeOf<(typeof TASK_RECORD_FIELDS)[number]>().toEqualTypeOf<keyof TaskRecordFields>();
  });

  it("Should name every WAL event type, in the order of the WAL event schema", () => {
    expect(WAL_EVENT_TYPES).toEqual(WalEventSchema.options.map((option) => option.shape.event_type.value));
    expectTypeOf<(typeof WAL_EVENT_TYPES)[number]>().toEqualTypeOf<WalEventType>();
    expectTypeOf<(typeof RUNTIME_EVENT_TYPES)[number]>().toEqualTypeOf<RuntimeEvent["type"]>();
  });

  it("Should list the statuses the schemas decode", () => {
    expect(TaskStatusSchema.options).toEqual([...TASK_STATUSES]);
    expect(StepStatusSchema.options).toEqual([...STEP_STATUSES]);
    expect(RunStatusSchema.options).toEqual([...RUN_STATUSES]);
    expect(AttemptStatusSchema.options).toEqual([...ATTEMPT_STATUSES]);
    expect(DelegationSchema.shape.status.options).toEqual([...DELEGATION_STATUSES]);
    expectTypeOf<TaskStatus>().toEqualTypeOf<z.infer<typeof TaskStatusSchema>>();
    expectTypeOf<StepStatus>().toEqualTypeOf<z.infer<typeof StepStatusSchema>>();
    expectTypeOf<RunStatus>().toEqualTypeOf<z.infer<typeof RunStatusSchema>>();
    expectTypeOf<AttemptStatus>().toEqualTypeOf<z.infer<typeof AttemptStatusSchema>>();
    expectTypeOf<DelegationStatus>().toEqualTypeOf<Delegation["status"]>();
  });
});
