import * as z from 'zod/mini';
import { EngagementEvent } from '../queues/messages';

/**
 * The schema the user uploads to the data platform's ingestion connector, generated from the
 * same zod schema that validates engagement events, so the two cannot drift.
 *
 * The platform reads an OpenAPI 3.0.x document with one `components.schemas.<object>` per
 * ingested object, each property a type (and a `format` for emails and date-times). Validation
 * keywords (patterns, lengths, `required`) mean nothing to it: the gateway validates before it
 * enqueues and always sends every field, so only type and format are kept.
 */

/** Every field of an engagement event, in schema order: each is sent on every record. */
export const ENGAGEMENT_EVENT_FIELDS = Object.keys(EngagementEvent.shape) as Array<keyof EngagementEvent>;

export const DEFAULT_INGESTION_OBJECT = 'EngagementEvent';

const ObjectName = z.string().check(z.regex(/^[A-Za-z][A-Za-z0-9_]{0,79}$/, 'an object name is letters, digits and underscores, starting with a letter'));

interface PropertySchema {
  type: string;
  format?: string;
}

export interface IngestionSchemaDocument {
  openapi: '3.0.3';
  info: { title: string; version: string };
  paths: Record<string, never>;
  components: { schemas: Record<string, { type: 'object'; properties: Record<string, PropertySchema> }> };
}

const GeneratedSchema = z.object({
  definitions: z.record(z.string(), z.looseObject({ properties: z.record(z.string(), z.looseObject({ type: z.string(), format: z.optional(z.string()) })) })),
});

export function ingestionSchemaDocument(objectName: string = DEFAULT_INGESTION_OBJECT): IngestionSchemaDocument {
  const name = ObjectName.parse(objectName);
  const generated = GeneratedSchema.parse(z.toJSONSchema(EngagementEvent, { target: 'openapi-3.0' }));
  const event = generated.definitions.EngagementEvent;
  if (!event) throw new Error('the engagement event schema did not generate its definition');
  const properties: Record<string, PropertySchema> = {};
  for (const [field, property] of Object.entries(event.properties)) {
    properties[field] = property.format ? { type: property.type, format: property.format } : { type: property.type };
  }
  return {
    openapi: '3.0.3',
    info: { title: `Integration gateway: ${name}`, version: '1' },
    paths: {},
    components: { schemas: { [name]: { type: 'object', properties } } },
  };
}
