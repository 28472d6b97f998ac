/**
 * @module Where the runtime may send an outbound request (an A2A peer's, a webhook's): http(s) to a host of
 * OUTBOUND_ALLOWLIST (its older name A2A_PEER_ALLOWLIST is read while it is unset or empty), and never,
 * through `*`, to a loopback, private or link-local address (the runtime's own network): such a host is reached only
 * when the allowlist names it (`host`, `host:port`) or, for loopback, says `loopback`. Hosts are compared as the URL
 * parser normalises them, so every spelling of an IPv4 address (decimal `2130706433`, hex `0x7f.1`, octal
 * `0177.0.0.1`, short `127.1`) is its dotted form, and an IPv6 one its compressed hex form. A host *name* that only
 * resolves to a private address cannot be told here (there is no DNS lookup before the fetch): `*` trusts DNS.
 */

/** Why a URL may not be called; null when it may. */
export function targetRefusal(url: string, allowlist: readonly string[]): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `${clip(url)} is not a URL`;
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return `${clip(url)} is not an http(s) URL`;
  const hostname = parsed.hostname.toLowerCase();
  const port = parsed.port === "" ? (parsed.protocol === "https:" ? 443 : 80) : Number(parsed.port);
  const internal = internalKind(hostname);
  let wildcard = false;
  for (const raw of allowlist) {
    const entry = raw.trim().toLowerCase();
    if (entry === "*") wildcard = true;
    else if (entry === "loopback") {
      if (internal === "loopback") return null;
    } else {
      const match = /^(\[[0-9a-f:.]+\]|[^:[\]/]+)(?::(\d{1,5}))?$/.exec(entry);
      if (match !== null && match[1] === hostname && (match[2] === undefined || Number(match[2]) === port)) return null;
    }
  }
  if (wildcard && internal === null) return null;
  if (wildcard) return `the host of ${clip(url)} is a ${internal} address: OUTBOUND_ALLOWLIST must name it ("*" does not cover it)`;
  return `the host of ${clip(url)} is not in OUTBOUND_ALLOWLIST`;
}

/** Whether a request to `url` is allowed (targetRefusal finds nothing). */
export function hostAllowed(url: string, allowlist: readonly string[]): boolean {
  return targetRefusal(url, allowlist) === null;
}

/** The kind of the runtime's own network a normalised host is in, or null for a public one (or a name). */
export function internalKind(hostname: string): "loopback" | "private" | "link-local" | null {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost")) return "loopback";
  const v4 = ipv4Of(host);
  if (v4 !== null) return ipv4Kind(v4);
  if (host.startsWith("[") && host.endsWith("]")) {
    const groups = ipv6Of(host.slice(1, -1));
    return groups === null ? "private" : ipv6Kind(groups);
  }
  return null;
}

/** The four octets of a dotted IPv4 address (the URL parser's form of every IPv4 spelling), or null. */
function ipv4Of(host: string): number[] | null {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (match === null) return null;
  const octets = match.slice(1).map(Number);
  return octets.every((o) => o <= 255) ? octets : null;
}

/** The IPv4 ranges that are the runtime's own network (RFC 1122, 1918, 3927, 6598). */
function ipv4Kind([a, b]: number[]): "loopback" | "private" | "link-local" | null {
  if (a === 127) return "loopback";
  if (a === 169 && b === 254) return "link-local";
  // 0.0.0.0/8 ("this network": 0.0.0.0 reaches the local host), 10/8, 100.64/10 (carrier NAT), 172.16/12, 192.168/16.
  if (a === 0 || a === 10 || (a === 100 && b! >= 64 && b! <= 127) || (a === 172 && b! >= 16 && b! <= 31) || (a === 192 && b === 168)) return "private";
  return null;
}

/** The eight 16-bit groups of an IPv6 address (with `::` and a trailing dotted IPv4 part), or null. */
function ipv6Of(text: string): number[] | null {
  let body = text;
  const tail: number[] = [];
  const dotted = /(?:^|:)(\d{1,3}(?:\.\d{1,3}){3})$/.exec(body);
  if (dotted !== null) {
    const v4 = ipv4Of(dotted[1]!);
    if (v4 === null) return null;
    tail.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
    body = body.slice(0, body.length - dotted[1]!.length);
    if (body.endsWith(":") && !body.endsWith("::")) body = body.slice(0, -1);
  }
  const halves = body.split("::");
  if (halves.length > 2) return null;
  const parse = (part: string) => (part === "" ? [] : part.split(":").map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN)));
  const head = parse(halves[0]!);
  const rest = halves.length === 2 ? parse(halves[1]!) : [];
  const missing = 8 - head.length - rest.length - tail.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return null;
  const groups = [...head, ...new Array<number>(halves.length === 2 ? missing : 0).fill(0), ...rest, ...tail];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g)) ? groups : null;
}

/** The IPv6 ranges that are the runtime's own network, an IPv4 address inside one judged as that address. */
function ipv6Kind(g: number[]): "loopback" | "private" | "link-local" | null {
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroUpTo(7) && g[7]! <= 1) return g[7] === 1 ? "loopback" : "private";
  const v4 = [g[6]! >> 8, g[6]! & 0xff, g[7]! >> 8, g[7]! & 0xff];
  // IPv4-mapped (::ffff:0:0/96), IPv4-compatible (::/96) and NAT64 (64:ff9b::/96) addresses carry an IPv4 one.
  if ((zeroUpTo(5) && (g[5] === 0xffff || g[5] === 0)) || (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0))) return ipv4Kind(v4);
  if ((g[0]! & 0xfe00) === 0xfc00) return "private";
  // fe80::/10 link-local, and the deprecated site-local fec0::/10 with it.
  if ((g[0]! & 0xffc0) === 0xfe80 || (g[0]! & 0xffc0) === 0xfec0) return (g[0]! & 0xffc0) === 0xfe80 ? "link-local" : "private";
  return null;
}

const clip = (url: string) => url.slice(0, 200);
