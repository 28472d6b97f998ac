/**
 * @module The address of a dev server's own workerd, behind wrangler's proxy. `wrangler dev` runs two workerd
 * processes: a proxy on the port it prints, which forwards every request and WebSocket frame, and the one that runs
 * the Worker and its objects on a port of its own. A production deploy has no such proxy, so a benchmark that wants
 * the runtime without it talks to the inner process directly. Linux only (/proc).
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { workerdPids } from "./meter.js";

/** Loopback TCP ports in LISTEN state, by socket inode, from a /proc/PID/net/tcp table. */
export function listeningLoopback(table: string): Map<string, number> {
  const ports = new Map<string, number>();
  for (const line of table.split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    // sl local_address rem_address st ... inode (field 9); 0A is LISTEN, 0100007F is 127.0.0.1.
    if (f.length < 10 || f[3] !== "0A") continue;
    const [host, port] = f[1]!.split(":");
    if (host === "0100007F") ports.set(f[9]!, parseInt(port!, 16));
  }
  return ports;
}

/** The ports process `pid` listens on at 127.0.0.1. */
function ownPorts(pid: number): number[] {
  const byInode = listeningLoopback(readFileSync(`/proc/${pid}/net/tcp`, "utf8"));
  const ports: number[] = [];
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue;
    }
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    const port = inode === undefined ? undefined : byInode.get(inode);
    if (port !== undefined) ports.push(port);
  }
  return ports;
}

/**
 * The base URL of the workerd that runs the Worker of the dev server whose process group is `pgid` and whose
 * proxy answers at `proxyBase`: the workerd of the group that does not listen on the proxy's port, at the one of
 * its ports where GET /health answers 200. Throws when there is none (not Linux, or not a `wrangler dev`).
 */
export async function innerWorkerdUrl(pgid: number, proxyBase: string): Promise<string> {
  const proxyPort = Number(new URL(proxyBase).port);
  for (const pid of workerdPids(pgid)) {
    const ports = ownPorts(pid);
    if (ports.includes(proxyPort)) continue;
    for (const port of ports) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(2_000) });
        await res.arrayBuffer();
        if (res.status === 200) return `http://127.0.0.1:${port}`;
      } catch {
        // not the Worker's port (the inspector, a loopback service)
      }
    }
  }
  throw new Error(`no workerd of process group ${pgid} other than the proxy on port ${proxyPort} answers GET /health`);
}
