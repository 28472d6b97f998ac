/** The A2A meaning of every domain error code: one table over the whole union, with the codes A2A 1.0 defines. */
import { JsonRpcTransportHandler } from "@a2a-js/sdk/server";
import { describe, expect, it } from "vitest";
import { A2A_ERROR_OF, a2aErrorOf } from "../../routes/a2a/a2a-errors.js";
import { ERROR_CODES, type ErrorCode, runtimeError } from "../../src/core/index.js";

/** The JSON-RPC error a domain error becomes on the wire (as the SDK's transport answers our handler's throw), for a call about task t1. */
const wire = (code: ErrorCode, message = "what went wrong") => JsonRpcTransportHandler.mapToJSONRPCError(a2aErrorOf(runtimeError(code, message), "t1"));

describe("A2A error mapping", () => {
  it("Should say what every domain error code means to an A2A client, and nothing more", () => {
    expect(Object.keys(A2A_ERROR_OF).sort()).toEqual([...ERROR_CODES].sort());
    for (const code of ERROR_CODES) {
      const { code: rpc, message } = wire(code);
      expect([-32001, -32004, -32602, -32603], code).toContain(rpc);
      expect(message, code).not.toBe("");
    }
  });

  it("Should answer a task the caller cannot see, unknown or someone else's, with TaskNotFoundError (-32001) alike", () => {
    for (const code of ["not_found", "permission_denied"] as const) {
      expect(wire(code, `secret ${code} detail`), code).toEqual({
        code: -32001,
        message: "Task not found: t1",
        data: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "TASK_NOT_FOUND", domain: "a2a-protocol.org", metadata: { taskId: "t1" } }],
      });
    }
  });

  it("Should answer refused arguments with -32602 (INVALID_PARAMS) and a change to an ended task with UnsupportedOperationError (-32004)", () => {
    expect(wire("validation_error", "steps[0].title is required")).toMatchObject({ code: -32602, message: "steps[0].title is required", data: [{ reason: "INVALID_PARAMS" }] });
    expect(wire("task_terminal")).toMatchObject({ code: -32004, message: "Task t1 is in a terminal state", data: [{ reason: "UNSUPPORTED_OPERATION", metadata: { taskId: "t1" } }] });
    expect(wire("action_resolved", "the action is already approved")).toMatchObject({ code: -32004, message: "the action is already approved" });
  });

  it("Should answer the runtime's own faults as internal errors (-32603) that name the code and carry our message only", () => {
    for (const code of ["storage_error", "internal_error", "rate_limited", "dependency_cycle"] as const) {
      expect(wire(code, "retry it"), code).toEqual({ code: -32603, message: `${code}: retry it` });
    }
  });
});
