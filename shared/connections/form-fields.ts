/**
 * How the dashboard draws a connector's forms (Connect Account and sync settings) from the JSON Schema that
 * `GET /api/v1/connectors` publishes. A field's schema gets these with zod's `.meta(...)`; they appear in the
 * JSON Schema and the OpenAPI document as they are. Standard keywords where JSON Schema has one:
 *
 * - `title`: the label, in the spec's words ("Secret API Key or Restricted Key");
 * - `description`: the hint under the field;
 * - `writeOnly`: a secret. A password field, never filled in again, shown back only masked;
 * - `contentMediaType: application/x-pem-file`: a pasted or chosen PEM file (a masked multi-line field);
 *
 * and the gateway's extensions, for what JSON Schema does not say:
 *
 * - `x-option-titles`: each enum value's words ("api" is "API Direct"), for choices and lists of choices;
 * - `x-advanced`: the gateway's own optional tuning, not a field of the spec's table: under "Advanced";
 * - `x-show-when`: shown only while another field has one of these values;
 * - `x-entry-titles`: a map's key and value labels (pre-chat field label → profile attribute).
 */
export interface FormFieldMeta {
  title: string;
  description?: string;
  writeOnly?: true;
  contentMediaType?: 'application/x-pem-file';
  'x-option-titles'?: Record<string, string>;
  'x-advanced'?: true;
  'x-show-when'?: Record<string, string[]>;
  'x-entry-titles'?: { key: string; value: string };
  [key: string]: unknown;
}

export const formField = {
  /** A plain field with the spec's label. */
  text: (title: string): FormFieldMeta => ({ title }),
  /** A secret: a password field, never sent back. */
  secret: (title: string): FormFieldMeta => ({ title, writeOnly: true }),
  /** A private key's PEM text: secret, multi-line, can be read from a file. */
  privateKey: (title: string): FormFieldMeta => ({ title, writeOnly: true, contentMediaType: 'application/x-pem-file' }),
  /** One of several values, each with its words; for a list, several of them. */
  choice: (title: string, optionTitles: Record<string, string>): FormFieldMeta => ({ title, 'x-option-titles': optionTitles }),
  /** The gateway's own optional setting, not in the spec's table. */
  advanced: (title: string): FormFieldMeta => ({ title, 'x-advanced': true }),
} as const;

/** The spec's words for the authentication methods, as the method choice shows them. */
export const authenticationMethodTitles = {
  api_key: 'API Key',
  jwt_bearer: 'JWT bearer (preferred)',
  authorization_code: 'Authorization code (sign in with the platform)',
} as const;
