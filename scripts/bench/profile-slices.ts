/**
 * @module V8 CPU profiles (`Profiler.stop`'s answer) summed by self time: each sample's frame is mapped to its original
 * source through the bundle's source map, then put in one slice of the per-call path. A frame outside our code
 * (zod, hono, JSON.parse, a SQL call) counts for the slice of the nearest frame of ours that called it, except zod,
 * which is split by who called it: the route's validation or `decide`'s second parse.
 */
import { SourceMap } from "node:module";
import { round } from "./harness/meter.js";

/** The part of a V8 CPU profile read here. */
export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number }; children?: number[] }[];
  samples?: number[];
  timeDeltas?: number[];
  startTime: number;
  endTime: number;
}

/** A frame after the source map: the original file (repo-relative, or a library's package path) and function. */
interface Frame { file: string; fn: string; ours: boolean }

/** The slices of the per-call path, in the order they are reported. */
const SLICES = [
  "auth and token checks", "revocation", "body reading, depth and JSON bounds", "zod at the route", "zod again in decide",
  "decide and apply", "idempotency", "commit: WAL, SQL, snapshots", "answer encoding", "index outbox (task → session index)",
  "route handler (its self time holds the RPC call to the object)", "task object, other (ours)", "other code of ours",
  "outside our code (runtime, V8, GC, hono, bundler shims)",
] as const;
type Slice = (typeof SLICES)[number];

/** The slice a function of ours (`fn` in `file`) belongs to. */
function sliceOfFile(file: string, fn: string): Slice {
  if (/revocation/.test(file)) return "revocation";
  if (/routes\/http\/auth|shared\/tokens|token-slots|src\/lib\/hash|src\/lib\/hex/.test(file)) return "auth and token checks";
  if (/routes\/http\/body|commands\/command-json/.test(file)) return "body reading, depth and JSON bounds";
  if (/src\/core\/(decide|apply|model|events|schemas)\//.test(file)) return "decide and apply";
  if (/idempoten/.test(file)) return "idempotency";
  if (/commit-shell|unit-of-work|task\/storage\/(wal|snapshot|row-text)/.test(file)) return "commit: WAL, SQL, snapshots";
  if (/src\/core\/views|src\/contract/.test(file)) return "answer encoding";
  if (/index-outbox|index-entry|durable-objects\/session\//.test(file) || fn === "pushIndex") return "index outbox (task → session index)";
  if (/^routes\/|durable-objects\/commands\//.test(file)) return "route handler (its self time holds the RPC call to the object)";
  if (/^durable-objects\//.test(file)) return "task object, other (ours)";
  return "other code of ours";
}

/** Maps positions in the bundle (the one script wrangler serves) to original sources. */
class Mapper {
  private readonly root = process.cwd();
  private readonly map: SourceMap;
  constructor(payload: object) {
    this.map = new SourceMap(payload as ConstructorParameters<typeof SourceMap>[0]);
  }

  frame(cf: CpuProfile["nodes"][number]["callFrame"]): Frame {
    const native = { file: "(native)", fn: cf.functionName || "(anonymous)", ours: false };
    if (cf.url === "") return native;
    const entry = this.map.findEntry(cf.lineNumber, cf.columnNumber) as { originalSource?: string; name?: string } | undefined;
    const source = entry?.originalSource;
    if (source === undefined) return { file: cf.url.replace(/^.*\//, ""), fn: cf.functionName || "(anonymous)", ours: false };
    let file = source.replace(/^file:\/\//, "");
    const nm = file.lastIndexOf("node_modules/");
    if (nm >= 0) return { file: file.slice(nm), fn: cf.functionName || entry?.name || "(anonymous)", ours: false };
    file = file.startsWith(this.root) ? file.slice(this.root.length + 1) : file.replace(/^(\.\.\/)+/, "");
    const ours = /^(routes|durable-objects|src)\//.test(file);
    return { file, fn: cf.functionName || entry?.name || "(anonymous)", ours };
  }
}

/** Self time by slice, by file and by function over `profiles`, per step of `steps`. */
export function summarize(profiles: CpuProfile[], steps: number, bundleSourceMap: object) {
  const mapper = new Mapper(bundleSourceMap);
  const bySlice = new Map<string, number>();
  const byFn = new Map<string, { function: string; where: string; us: number }>();
  const byFile = new Map<string, number>();
  const bySliceFn = new Map<string, Map<string, number>>();
  let totalUs = 0;
  let idleUs = 0;
  for (const p of profiles) {
    const parent = new Map<number, number>();
    const nodes = new Map(p.nodes.map((n) => [n.id, n]));
    for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const frames = new Map<number, Frame>();
    const frameOf = (id: number) => frames.get(id) ?? frames.set(id, mapper.frame(nodes.get(id)!.callFrame)).get(id)!;
    const sliceCache = new Map<number, Slice | "idle">();
    const sliceOf = (id: number): Slice | "idle" => {
      const cached = sliceCache.get(id);
      if (cached !== undefined) return cached;
      const f = frameOf(id);
      let s: Slice | "idle";
      if (f.fn === "(idle)") s = "idle";
      else if (f.ours) s = sliceOfFile(f.file, f.fn);
      // The answer's Response, made by hono's c.json (JSON.stringify and the Response constructor under it).
      else if (f.file.endsWith("node_modules/hono/dist/context.js") || (f.file === "(native)" && /^(Response|stringify)$/.test(f.fn))) s = "answer encoding";
      // The SQLite transaction the commit runs in (its BEGIN/COMMIT are the native call's self time).
      else if (f.file === "(native)" && f.fn === "transactionSync") s = "commit: WAL, SQL, snapshots";
      else {
        // The nearest frame of ours above it decides; zod is split by that caller.
        let up = parent.get(id);
        while (up !== undefined && !frameOf(up).ours) up = parent.get(up);
        if (up === undefined) s = "outside our code (runtime, V8, GC, hono, bundler shims)";
        else if (f.file.includes("node_modules/zod")) s = /src\/core\/decide\//.test(frameOf(up).file) ? "zod again in decide" : "zod at the route";
        else s = sliceOfFile(frameOf(up).file, frameOf(up).fn);
      }
      sliceCache.set(id, s);
      return s;
    };
    const samples = p.samples ?? [];
    const deltas = p.timeDeltas ?? [];
    for (let k = 0; k < samples.length; k++) {
      // A sample's time is the delta to the next sample (the last one: none).
      const us = deltas[k + 1] ?? 0;
      if (us <= 0) continue;
      const id = samples[k]!;
      totalUs += us;
      const s = sliceOf(id);
      if (s === "idle") {
        idleUs += us;
        continue;
      }
      bySlice.set(s, (bySlice.get(s) ?? 0) + us);
      const f = frameOf(id);
      const key = `${f.fn}@${f.file}`;
      const e = byFn.get(key) ?? byFn.set(key, { function: f.fn, where: f.file, us: 0 }).get(key)!;
      e.us += us;
      const inSlice = bySliceFn.get(s) ?? bySliceFn.set(s, new Map()).get(s)!;
      inSlice.set(key, (inSlice.get(key) ?? 0) + us);
      const fileKey = f.ours ? f.file : f.file.startsWith("node_modules/") ? f.file.split("/").slice(0, f.file.startsWith("node_modules/@") ? 3 : 2).join("/") : f.file;
      byFile.set(fileKey, (byFile.get(fileKey) ?? 0) + us);
    }
  }
  const busyUs = totalUs - idleUs;
  const row = (us: number) => ({ share: round(us / busyUs, 4), us_per_step: round(us / steps, 1) });
  return {
    total_ms: round(totalUs / 1000, 1),
    idle_ms: round(idleUs / 1000, 1),
    busy_ms: round(busyUs / 1000, 1),
    busy_us_per_step: round(busyUs / steps, 1),
    slices: SLICES.map((slice) => ({
      slice, ...row(bySlice.get(slice) ?? 0),
      top: [...(bySliceFn.get(slice) ?? [])].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([fn, us]) => ({ function: fn, ...row(us) })),
    })),
    files: [...byFile].sort((a, b) => b[1] - a[1]).map(([file, us]) => ({ file, ...row(us) })),
    functions: [...byFn.values()].sort((a, b) => b.us - a.us).map((f) => ({ function: f.function, where: f.where, ...row(f.us) })),
  };
}
