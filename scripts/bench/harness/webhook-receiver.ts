/**
 * @module A webhook receiver for the benchmarks and the demo: a node:http server on 127.0.0.1 that verifies every
 * delivery under its subscription's secret (with the Standard Webhooks library `standardwebhooks` itself, or a
 * verifier given, e.g. the SDK's `verifyWebhook`), answers 204 (400 to one that does not verify, 404 to an unknown
 * path), and records when each arrived, by webhook-id. Each subscription gets its own path
 * (`/hooks/<group>/<name>`), so the receiver knows whose secret signs a delivery.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { Webhook } from "standardwebhooks";

/** A verified delivery: its webhook-id, its subscription's path, the runtime event it carried, when it arrived. */
export interface Arrival {
  readonly webhookId: string;
  readonly group: string;
  readonly path: string;
  readonly type: string;
  readonly eventId: string;
  readonly taskId: string;
  readonly stepId?: string;
  readonly sequence: number;
  /** performance.now() when the delivery's whole body had been read (before it was verified). */
  readonly at: number;
  /** The message as verified: `{type, timestamp, data}`. */
  readonly message: { type: string; timestamp: string; data: Record<string, unknown> };
}

/** Checks a delivery's body and headers (webhook-id, webhook-timestamp, webhook-signature) and answers its message; throws when it does not verify. */
export type Verifier = (body: string, headers: Record<string, string>) => unknown;

/** The Standard Webhooks library's own verification under `secret` (`whsec_…`). */
export function standardVerifier(secret: string): Verifier {
  const webhook = new Webhook(secret);
  return (body, headers) => webhook.verify(body, headers);
}

/** The receiver's counts of one group of subscriptions. */
export interface GroupCounts {
  /** Verified deliveries, the first of each webhook-id. */
  received: number;
  /** Verified deliveries whose webhook-id had arrived before. */
  duplicate_webhook_ids: number;
  /** Verified deliveries of an event its subscription had already received under another webhook-id. */
  duplicate_events: number;
  /** Deliveries of a subscription's task that arrived after one with a higher `sequence`. */
  out_of_order: number;
  /** Deliveries answered 400 (the signature did not verify) or 404 (no subscription at that path). */
  rejected: number;
  first_rejection?: string;
}

const newCounts = (): GroupCounts => ({ received: 0, duplicate_webhook_ids: 0, duplicate_events: 0, out_of_order: 0, rejected: 0 });

/** The receiver. `start()` it, `register` a subscription's secret under the path `url` gave it, `close()` it. */
export class WebhookReceiver {
  readonly arrivals: Arrival[] = [];
  private readonly verifiers = new Map<string, Verifier>();
  private readonly seenIds = new Set<string>();
  private readonly seenEvents = new Set<string>();
  private readonly lastSequence = new Map<string, number>();
  private readonly counts = new Map<string, GroupCounts>();
  private readonly listeners = new Set<() => void>();
  /** TCP connections the receiver has accepted, and how many are open now (the sender's reuse of connections). */
  connectionsAccepted = 0;
  connectionsOpen = 0;
  /** Called with each verified delivery, as it arrives. */
  onArrival: ((a: Arrival) => void) | null = null;

  private constructor(
    private readonly server: http.Server,
    readonly base: string,
  ) {}

  /** A receiver listening on 127.0.0.1 and a free port. */
  static async start(): Promise<WebhookReceiver> {
    let receiver: WebhookReceiver | undefined;
    const server = http.createServer((req, res) => receiver!.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    receiver = new WebhookReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on("connection", (socket) => {
      receiver!.connectionsAccepted++;
      receiver!.connectionsOpen++;
      socket.once("close", () => receiver!.connectionsOpen--);
    });
    return receiver;
  }

  /** The URL of subscription `name` of `group` (letters, digits, `-` and `_`). */
  url(group: string, name: string): string {
    return `${this.base}/hooks/${group}/${name}`;
  }

  /** Deliveries to `url(group, name)` are verified by `verify` (e.g. `standardVerifier(secret)`). */
  register(group: string, name: string, verify: Verifier): void {
    this.verifiers.set(`/hooks/${group}/${name}`, verify);
  }

  /** The counts of `group` so far. */
  countsOf(group: string): GroupCounts {
    return { ...(this.counts.get(group) ?? newCounts()) };
  }

  /**
   * Resolves once `group` has received `expected` verified deliveries, or when none arrived for `stallMs` (then
   * `stalled`); the time of the last arrival seen either way.
   */
  async waitFor(group: string, expected: number, stallMs: number): Promise<{ received: number; stalled: boolean }> {
    for (;;) {
      const received = this.counts.get(group)?.received ?? 0;
      if (received >= expected) return { received, stalled: false };
      const arrived = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          this.listeners.delete(listener);
          resolve(false);
        }, stallMs);
        const listener = () => {
          clearTimeout(timer);
          this.listeners.delete(listener);
          resolve(true);
        };
        this.listeners.add(listener);
      });
      if (!arrived) return { received: this.counts.get(group)?.received ?? 0, stalled: true };
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.closeAllConnections();
      this.server.close(() => resolve());
    });
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const at = performance.now();
      const path = (req.url ?? "").split("?")[0]!;
      const group = path.split("/")[2] ?? "";
      const counts = this.counts.get(group) ?? newCounts();
      this.counts.set(group, counts);
      const reject = (status: number, why: string) => {
        counts.rejected++;
        counts.first_rejection ??= `${status}: ${why}`;
        res.writeHead(status, { "content-type": "text/plain" }).end(why);
      };
      const verifier = req.method === "POST" ? this.verifiers.get(path) : undefined;
      if (verifier === undefined) return reject(404, `no subscription at ${req.method} ${path}`);
      const body = Buffer.concat(chunks).toString("utf8");
      const headers: Record<string, string> = {};
      for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"]) headers[name] = String(req.headers[name] ?? "");
      let message: Arrival["message"];
      try {
        message = verifier(body, headers) as Arrival["message"];
      } catch (e) {
        return reject(400, `not verified: ${e instanceof Error ? e.message : String(e)}`);
      }
      res.writeHead(204).end();
      this.record(counts, { webhookId: headers["webhook-id"]!, group, path, at, message, ...eventFields(message.data) });
    });
  }

  private record(counts: GroupCounts, a: Arrival): void {
    if (this.seenIds.has(a.webhookId)) {
      counts.duplicate_webhook_ids++;
      return;
    }
    this.seenIds.add(a.webhookId);
    const eventKey = `${a.path}#${a.eventId}`;
    if (this.seenEvents.has(eventKey)) counts.duplicate_events++;
    this.seenEvents.add(eventKey);
    const orderKey = `${a.path}#${a.taskId}`;
    if (a.sequence < (this.lastSequence.get(orderKey) ?? -Infinity)) counts.out_of_order++;
    else this.lastSequence.set(orderKey, a.sequence);
    counts.received++;
    this.arrivals.push(a);
    this.onArrival?.(a);
    for (const listener of [...this.listeners]) listener();
  }
}

/** The fields of a runtime event the receiver keys by. */
function eventFields(data: Record<string, unknown>): Pick<Arrival, "type" | "eventId" | "taskId" | "stepId" | "sequence"> {
  return {
    type: String(data.type),
    eventId: String(data.eventId),
    taskId: String(data.taskId),
    ...(typeof data.stepId === "string" ? { stepId: data.stepId } : {}),
    sequence: Number(data.sequence),
  };
}
