import { problems } from '../api/problem';
import type { Connector, SyncingConnector, WebhookConnector } from './connector';

/**
 * The connectors this gateway offers, by name (functions that run one capability read the
 * capability lists in registry.ts instead). The core asks it for a connector or for those with
 * a capability; it answers 404 in the user's words for a name it does not know.
 */
export class ConnectorRegistry {
  readonly #byName = new Map<string, Connector>();

  constructor(connectors: readonly Connector[]) {
    for (const connector of connectors) this.add(connector);
  }

  /** One more connector (a registry line; tests add a fake one this way). */
  add(connector: Connector): void {
    if (this.#byName.has(connector.name)) throw new Error(`two connectors are named ${connector.name}`);
    this.#byName.set(connector.name, connector);
  }

  has(name: string): boolean {
    return this.#byName.has(name);
  }

  names(): string[] {
    return [...this.#byName.keys()];
  }

  all(): Connector[] {
    return [...this.#byName.values()];
  }

  /** The connector, or a 404 problem naming the ones there are. */
  get(name: string): Connector {
    const connector = this.#byName.get(name);
    if (!connector) throw problems.notFound(`There is no ${name} connector. Connectors: ${this.names().join(', ')}.`);
    return connector;
  }

  find(name: string): Connector | undefined {
    return this.#byName.get(name);
  }

  /** Connectors that sync records on schedules, by name (what the dispatcher and sync jobs run). */
  syncing(): Record<string, SyncingConnector> {
    return Object.fromEntries(this.all().filter(isSyncing).map((connector) => [connector.name, connector]));
  }

  /** Connectors whose platforms send webhooks. */
  withWebhooks(): WebhookConnector[] {
    return this.all().filter((connector): connector is WebhookConnector => connector.webhooks !== undefined);
  }
}

function isSyncing(connector: Connector): connector is SyncingConnector {
  return connector.sync !== undefined && connector.client !== undefined;
}
