import * as z from 'zod/mini';
import { formField } from '../connections/form-fields';
import { CustomObject, customObjectsProblem } from './catalog';

/** Data sync settings, as the spec's Sync settings table lists them. */
export const DataSyncSettings = z
  .strictObject({
    /** Read only, Write only, or Read + Write. */
    direction: z
      ._default(z.enum(['read', 'write', 'read_write']), 'read_write')
      .check(z.meta(formField.choice('Sync direction', { read: 'Read only', write: 'Write only', read_write: 'Read + Write' }))),
    /** Query (SQL reads), Ingest (engagement events), or Both. */
    operation: z
      ._default(z.enum(['query', 'ingest', 'both']), 'both')
      .check(z.meta(formField.choice('Data operation', { query: 'Query', ingest: 'Ingest', both: 'Both' }))),
    /** Unified Individual, Engagement, Custom DMOs. */
    dataModelObjects: z
      ._default(z.array(z.enum(['unified_individual', 'engagement', 'custom'])).check(z.minLength(1, 'Choose at least one data model object.')), [
        'unified_individual',
        'engagement',
      ])
      .check(z.meta(formField.choice('Data model objects', { unified_individual: 'Unified Individual', engagement: 'Engagement', custom: 'Custom DMOs' }))),
    /** Real-time (streaming), Hourly, Daily: how ingested events are sent. */
    frequency: z
      ._default(z.enum(['real_time', 'hourly', 'daily']), 'real_time')
      .check(z.meta(formField.choice('Sync frequency', { real_time: 'Real-time (streaming)', hourly: 'Hourly', daily: 'Daily' }))),
    /**
     * Whether the platform's CRM connector sync feeds the unified profiles. It runs inside the data
     * platform on the platform's own schedule (every 5-10 minutes, then identity resolution): the
     * gateway has nothing to call for it. It changes what the gateway says about freshness: profile
     * answers state that CRM-sourced fields may lag by that much.
     */
    crmConnectorSync: z._default(z.boolean(), false).check(z.meta(formField.choice('CRM connector sync', { true: 'Enabled', false: 'Disabled' }))),
    /** Custom DMOs playbooks may read (with Custom DMOs among the data model objects): names and columns. */
    customObjects: z._default(z.array(CustomObject).check(z.maxLength(20)), []).check(
      z.superRefine((objects, context) => {
        const problem = customObjectsProblem(objects);
        if (problem) context.addIssue({ code: 'custom', message: problem });
      }),
      z.meta({ ...formField.advanced('Custom DMOs playbooks may read'), 'x-show-when': { dataModelObjects: ['custom'] } }),
    ),
    /**
     * Turns each ended conversation (the messaging connector's `conversation.ended` event) into an
     * engagement event of type `conversation_ended`, sent like the playbooks' own (needs Engagement
     * writes allowed). Off by default.
     */
    conversationEndedEvents: z
      ._default(z.boolean(), false)
      .check(z.meta(formField.choice('Ended conversations as engagement events', { true: 'Send them', false: 'Do not send' }))),
  })
  .register(z.globalRegistry, { id: 'DataSyncSettings' });
export type DataSyncSettings = z.infer<typeof DataSyncSettings>;

/** Whether the settings let the gateway write engagement events (Write or Read + Write, Ingest or Both). */
export function allowsIngestion(settings: DataSyncSettings): boolean {
  return settings.direction !== 'read' && settings.operation !== 'query' && settings.dataModelObjects.includes('engagement');
}

/** Whether the settings let the gateway query the platform at all (Read or Read + Write, Query or Both). */
export function allowsQueries(settings: DataSyncSettings): boolean {
  return settings.direction !== 'write' && settings.operation !== 'ingest';
}

/** Whether the settings let the gateway read unified profiles (Read or Read + Write, Query or Both). */
export function allowsProfileReads(settings: DataSyncSettings): boolean {
  return settings.direction !== 'write' && settings.operation !== 'ingest' && settings.dataModelObjects.includes('unified_individual');
}
