import * as z from 'zod/mini';
import { ENGAGEMENT_EVENT_FIELDS } from './ingestion-schema';
import type { DataObjectDefinition } from './sql';

/**
 * The data model objects playbooks may read, and their columns: the spec's Unified Individual and
 * Engagement objects, plus the custom objects (Custom DMOs) the user declares in the data
 * connection's settings. Only objects the settings' `dataModelObjects` select are readable, and
 * only the declared columns of each: the catalog is the allow-list every query is built from.
 */

/** A platform API name: letters, digits, underscores, starting with a letter (`Order__dlm`). */
export const DataIdentifier = z
  .string()
  .check(z.regex(/^[A-Za-z][A-Za-z0-9_]{0,79}$/, 'a name of letters, digits and underscores (at most 80), starting with a letter'));

export const ColumnType = z.enum(['text', 'number', 'datetime']);
export type ColumnType = z.infer<typeof ColumnType>;

export const CustomObject = z
  .strictObject({
    /** The object's API name on the platform (a custom DMO ends in `__dlm`). */
    name: DataIdentifier,
    columns: z.array(z.strictObject({ name: DataIdentifier, type: z._default(ColumnType, 'text') })).check(z.minLength(1), z.maxLength(100)),
    /** A column unique per row, used to page through the object. */
    keyColumn: DataIdentifier,
    /** The column holding the person's email, if any (per-person reads). */
    emailColumn: z.optional(DataIdentifier),
  })
  .check(
    z.superRefine((object, context) => {
      const names = object.columns.map((c) => c.name.toLowerCase());
      if (new Set(names).size !== names.length) context.addIssue({ code: 'custom', path: ['columns'], message: 'column names must be unique' });
      for (const field of ['keyColumn', 'emailColumn'] as const) {
        const name = object[field];
        if (name !== undefined && !names.includes(name.toLowerCase()))
          context.addIssue({ code: 'custom', path: [field], message: 'must be one of the declared columns' });
      }
    }),
  )
  .register(z.globalRegistry, {
    id: 'CustomDataObject',
    description: 'A custom data model object the playbooks may read: its API name and the columns they may name',
  });
export type CustomObject = z.infer<typeof CustomObject>;

export type DataModelObject = 'unified_individual' | 'engagement' | 'custom';

export interface ReadableObject {
  name: string;
  aliases: string[];
  /** Which `dataModelObjects` setting opens it. */
  model: DataModelObject;
  columns: Record<string, ColumnType>;
  keyColumn: string;
  emailColumn?: string;
}

export const UNIFIED_INDIVIDUAL: ReadableObject = {
  name: 'UnifiedIndividual__dlm',
  aliases: ['UnifiedIndividual'],
  model: 'unified_individual',
  columns: { IndividualId: 'text', FirstName: 'text', LastName: 'text', Email: 'text' },
  keyColumn: 'IndividualId',
  emailColumn: 'Email',
};

export const ENGAGEMENT: ReadableObject = {
  name: 'EngagementEvent__dlm',
  aliases: ['EngagementEvent'],
  model: 'engagement',
  columns: Object.fromEntries(ENGAGEMENT_EVENT_FIELDS.map((field) => [field, field === 'event_timestamp' ? 'datetime' : 'text'])) as Record<string, ColumnType>,
  keyColumn: 'event_id',
  emailColumn: 'customer_email',
};

/** Built-in and declared objects that share a name (ignoring case) would be ambiguous. */
export function customObjectsProblem(objects: readonly CustomObject[]): string | undefined {
  const taken = new Set([UNIFIED_INDIVIDUAL, ENGAGEMENT].flatMap((o) => [o.name, ...o.aliases]).map((n) => n.toLowerCase()));
  for (const object of objects) {
    const name = object.name.toLowerCase();
    if (taken.has(name)) return `${object.name} is declared twice, or is a built-in object's name`;
    taken.add(name);
  }
  return undefined;
}

export class DataCatalog {
  readonly #objects: ReadableObject[];

  constructor(options: { dataModelObjects: readonly DataModelObject[]; customObjects: readonly CustomObject[] }) {
    const all: ReadableObject[] = [
      UNIFIED_INDIVIDUAL,
      ENGAGEMENT,
      ...options.customObjects.map((object) => ({
        name: object.name,
        aliases: [],
        model: 'custom' as const,
        columns: Object.fromEntries(object.columns.map((c) => [c.name, c.type])),
        keyColumn: object.keyColumn,
        ...(object.emailColumn ? { emailColumn: object.emailColumn } : {}),
      })),
    ];
    this.#objects = all.filter((object) => options.dataModelObjects.includes(object.model));
  }

  /** The object by its name or alias (exact spelling), if the settings open it. */
  find(name: string): ReadableObject | undefined {
    return this.#objects.find((object) => object.name === name || object.aliases.includes(name));
  }

  names(): string[] {
    return this.#objects.map((object) => object.name);
  }

  /** The allow-list the SQL builder reads, for the objects open to reading. */
  definitions(): Record<string, DataObjectDefinition> {
    return Object.fromEntries(
      this.#objects.map((object) => [
        object.name,
        {
          aliases: object.aliases,
          columns: Object.keys(object.columns),
          numericColumns: Object.entries(object.columns)
            .filter(([, type]) => type === 'number')
            .map(([name]) => name),
        },
      ]),
    );
  }
}
