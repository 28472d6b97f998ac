/** @module The benchmarks' one command-line parser and entry point: options read into a copy of their defaults, errors printed, exit codes. */

/** An option's value: a flag, a whole number, a word, or not given. */
type OptionValue = boolean | number | string | null;

/**
 * `defaults` with `argv` applied: `--steps-per-worker 5` sets `stepsPerWorker`. A boolean is a flag, a number
 * takes a whole number ≥ 1, anything else takes the next word as it is; `-h`/`--help` prints `usage` and exits.
 */
export function parseCli<T extends Record<string, OptionValue>>(usage: string, defaults: T, argv = process.argv.slice(2)): T {
  const o: Record<string, OptionValue> = { ...defaults };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "-h" || arg === "--help") {
      console.log(usage);
      process.exit(0);
    }
    const key = arg.slice(2).replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
    if (!arg.startsWith("--") || !(key in o)) throw new Error(`unknown option ${arg}\n${usage}`);
    if (typeof o[key] === "boolean") {
      o[key] = true;
      continue;
    }
    const v = argv[++i];
    if (v === undefined) throw new Error(`${arg} needs a value\n${usage}`);
    if (typeof o[key] === "number" && !(Number.isInteger(Number(v)) && Number(v) >= 1)) throw new Error(`${arg} takes a whole number from 1, not ${v}`);
    o[key] = typeof o[key] === "number" ? Number(v) : v;
  }
  return o as T;
}

/** A whole-number option given as text (null when not given: `dflt`); anything but a whole number from 1 is an error naming `--name`. */
export function wholeOption(value: string | null, name: string, dflt: number): number {
  if (value === null) return dflt;
  if (!(Number.isInteger(Number(value)) && Number(value) >= 1)) throw new Error(`--${name} takes a whole number from 1, not ${value}`);
  return Number(value);
}

/** Runs a benchmark's `main`: a fatal error prints its message (the stack with BENCH_DEBUG) and exits 1; `exit` leaves at once when done (BullMQ may keep sockets). */
export function run(main: () => Promise<void>, exit = false): void {
  main().then(
    () => {
      if (exit) process.exit(process.exitCode ?? 0);
    },
    (e: unknown) => {
      console.error(e instanceof Error ? (process.env.BENCH_DEBUG ? (e.stack ?? e.message) : e.message) : e);
      process.exit(1);
    },
  );
}
