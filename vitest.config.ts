/** @module Two test projects: the pure core in Node, the service in the Workers runtime. */
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "core",
          include: ["test/core/**/*.test.ts", "test/scripts/**/*.test.ts"],
          environment: "node",
        },
      },
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            // Test-only secrets; production sets them with `wrangler secret put`.
            miniflare: { bindings: { TOKEN_SECRET: "test-token-secret", ADMIN_TOKEN: "test-admin-token" } },
          }),
        ],
        test: {
          name: "worker",
          include: ["test/worker/**/*.test.ts"],
        },
      },
    ],
  },
});
