/** @module How the benchmarks report: numbers, plain-text tables, the results file. */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";

/** `n` with `digits` decimals, "-" for undefined, null, NaN or infinite. */
export function fmt(n: number | undefined | null, digits = 1): string {
  return n === undefined || n === null || !Number.isFinite(n) ? "-" : n.toFixed(digits);
}

/** A plain-text table: first column left-aligned, the others right-aligned, a dashed line under the headers. */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(headers), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

/** A table with its title, printed by `printTables`. */
export interface Table { title: string; headers: string[]; rows: string[][] }

/** Prints each table under its title. */
export function printTables(tables: Table[]): void {
  for (const t of tables) console.log(`\n${t.title}:\n${table(t.headers, t.rows)}`);
}

/** Writes `results` as indented JSON to `file` (its directory created; raw `samples` kept in memory are left out) and says so. */
export function writeResults(file: string, results: unknown, wallSeconds?: number): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(results, (k, v: unknown) => (k === "samples" && typeof v === "object" ? undefined : v), 2)}\n`);
  console.log(`\nwrote ${file}${wallSeconds === undefined ? "" : ` (${wallSeconds} s)`}`);
}

/** An error's message, or the thrown value as text. */
export const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** `min..max` of a list of numbers (one number alone when it has one). */
export const span = (xs: number[], digits = 1): string => (xs.length === 1 ? fmt(xs[0], digits) : `${fmt(Math.min(...xs), digits)}..${fmt(Math.max(...xs), digits)}`);

/** "p50/p99" of latency statistics (or another pair of their fields), `digits` decimals. */
export const pct = (s: { p50_ms: number; p99_ms: number; max_ms?: number } | undefined, digits = 2, hi: "p99_ms" | "max_ms" = "p99_ms"): string => `${fmt(s?.p50_ms, digits)}/${fmt(s?.[hi], digits)}`;
