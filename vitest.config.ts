/** @module Three test projects: the pure core in Node, the service in the Workers runtime, a live client against `wrangler dev`. */
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // The dashboard's assets must exist before the Workers pool reads wrangler.toml's [assets].
    globalSetup: ["test/global-setup.ts"],
    // Two at a time: the core's Node tests beside the Workers pool (group 0), then the live e2e files one at a time
    // (group 1), so a Chromium page or a wrangler dev start never shares the machine with a busy workerd.
    maxWorkers: 2,
    projects: [
      {
        test: {
          name: "core",
          sequence: { groupOrder: 0 },
          // Pure functions and file reads: no test mocks a module or changes a global, so the files share one module
          // graph per worker instead of importing it again each (about half of this project's time went to imports).
          isolate: false,
          include: ["test/core/**/*.test.ts", "test/repo/**/*.test.ts", "test/conformance/core.test.ts", "test/scripts/**/*.test.ts", "test/dashboard/**/*.test.ts"],
          environment: "node",
        },
      },
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            // Test-only secrets; production sets them with `wrangler secret put`. A short SSE heartbeat so the
            // stream tests see heartbeats quickly; a short child-cancel timeout so a stopped task's alarm test
            // sees it pass; 8 subscribers and 4 command sockets per object so the cap tests open 9 streams and
            // 5 sockets, not 65 (no other test holds more than 5 streams or 1 socket of one object); CORS for
            // one origin so the CORS tests have something to allow; outbound calls (A2A peers, webhooks) to loopback, as local
            // development allows.
            miniflare: {
              bindings: {
                TOKEN_SECRET: "test-token-secret",
                ADMIN_TOKEN: "test-admin-token",
                SSE_HEARTBEAT_MS: "250",
                CHILD_CANCEL_TIMEOUT_MS: "2000",
                SSE_MAX_SUBSCRIBERS: "8",
                SOCKET_MAX_CONNECTIONS: "4",
                CORS_ORIGINS: "https://dash.example",
                OUTBOUND_ALLOWLIST: "loopback",
                // Snapshots every 40 events, so every service test that restarts an object restores one.
                SNAPSHOT_EVERY_EVENTS: "40",
                // Small, so that every service test's task objects move keys to the spill table as a busy task does.
                IDEMPOTENCY_INDEX_KEYS: "16",
                // Counted caps too large to reach quickly through every surface: actions per attempt and children
                // per delegated step (the defaults' own tests read readConfig; the other caps are tested at their defaults).
                MAX_ACTIONS_PER_ATTEMPT: "4",
                MAX_CHILDREN_PER_STEP: "2",
                // Archives record a retention deadline a day later; the retention tests move the object's clock past it.
                RETENTION_DAYS: "1",
                // Webhook retries 100 ms, 400 ms, 1.6 s apart, so a receiver failing three times gets the fourth try within
                // seconds, and 4 tries at most: a delivery a test leaves failing stops within about 2 s instead of
                // retrying in the background of later files (whose fake timers would catch its timers).
                WEBHOOK_RETRY_BASE_MS: "100",
                WEBHOOK_MAX_TRIES: "4",
                // Schedules per session: the cap test creates 3 and is refused the 4th.
                MAX_SCHEDULES_PER_SESSION: "3",
              },
            },
          }),
        ],
        test: {
          name: "worker",
          sequence: { groupOrder: 0 },
          // A loopback webhook receiver in Node: the Workers pool serves no HTTP of its own for outbound calls to reach.
          globalSetup: ["test/support/webhook-receiver-setup.ts"],
          // One module graph and one Worker for every file: importing the Worker per file cost about as long as the
          // tests themselves. Every test makes its own session (a fresh ULID), so the objects files touch are apart.
          isolate: false,
          // Every surface and object test runs in workerd against the Worker of wrangler.toml.
          include: [
            "test/{rest,socket,sse,mcp,a2a,objects,sdk}/**/*.test.ts",
            "test/conformance/http.test.ts",
          ],
        },
      },
      {
        test: {
          name: "e2e",
          sequence: { groupOrder: 1 },
          maxWorkers: 1,
          globalSetup: ["test/e2e/support/shared-server.ts"],
          include: ["test/e2e/**/*.test.ts"],
          environment: "node",
          // Starting `wrangler dev` takes a few seconds; the test itself bounds every wait.
          testTimeout: 90_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
