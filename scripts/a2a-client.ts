/**
 * @module The official A2A client (@a2a-js/sdk) for a runtime: built from the Agent Card it discovers at `base`,
 * every request with the token as its bearer. Nothing here needs Node, so the demo, the benchmark and the service
 * tests (over SELF.fetch) build their clients the same way.
 */
import { type Client, ClientFactory, ClientFactoryOptions, createAuthenticatingFetchWithRetry, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";

/** The official A2A client for `token` at `base`; `fetchImpl` carries every request (the global fetch by default). */
export async function connectA2aClient(base: string, token: string, fetchImpl: typeof fetch = (input, init) => fetch(input, init)): Promise<Client> {
  const authed = createAuthenticatingFetchWithRetry(fetchImpl, {
    headers: async () => ({ Authorization: `Bearer ${token}` }),
    shouldRetryWithHeaders: async () => undefined,
  });
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl: authed })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl: authed }),
      preferredTransports: ["JSONRPC"],
    }),
  );
  return factory.createFromUrl(base);
}
