// Forms drawn from the JSON Schemas that GET /api/v1/connectors publishes (the same zod schemas the API
// validates with), so each connector's Connect Account and sync settings forms offer exactly the fields the
// gateway accepts, in the spec's words (shared/connections/form-fields.ts lists the keywords read here).
// Problems come back from the API per field (`errors[].path`) and are shown beside that field.

import { h, humanize } from './dom.js';
import { clearError, drawField, setError } from './form-fields.js';

const METHOD = 'authenticationMethod';

/** The schema with its local references (`#/$defs/...`, for named shapes) replaced by what they name. */
export function resolved(schema, root = schema, depth = 0) {
  if (Array.isArray(schema)) return schema.map((item) => resolved(item, root, depth));
  if (!schema || typeof schema !== 'object' || depth > 20) return schema;
  if (typeof schema.$ref === 'string' && schema.$ref.startsWith('#/$defs/')) {
    const { $ref, ...rest } = schema;
    return resolved({ ...root.$defs?.[$ref.slice('#/$defs/'.length)], ...rest }, root, depth + 1);
  }
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, key === '$defs' ? value : resolved(value, root, depth + 1)]));
}

/** The variants of a form: one per authentication method (or the one object). */
export function variantsOf(formSchema) {
  const schema = resolved(formSchema);
  const variants = schema.oneOf ?? schema.anyOf ?? [schema];
  return variants.map((variant) => ({
    method: variant.properties?.[METHOD]?.const,
    methodTitle: variant.properties?.[METHOD]?.title ?? humanize(variant.properties?.[METHOD]?.const ?? ''),
    schema: variant,
  }));
}

/**
 * Draws the fields of `schema` into `container` and answers its controller.
 * - values: current values (connection config or settings): prefilled, secrets never;
 * - saved: masked secrets of the saved connection ({ apiKey: '••••abcd' }), shown beside their field;
 * - kept: secrets a reconnect keeps when left empty;
 * - method: the authentication method to show first.
 */
export function schemaForm(container, { schema, idPrefix, values = {}, saved = {}, kept = [], method, onMethodChange }) {
  const variants = variantsOf(schema);
  let current = variants.find((variant) => variant.method !== undefined && variant.method === (method ?? values[METHOD])) ?? variants[0];
  /** name → field controller, for the variant shown. */
  let fields = new Map();
  const typed = new Map(); // values typed in fields of other methods, kept while switching
  const formError = h('div', { class: 'panel danger form-error', role: 'alert', hidden: true });
  const fieldsBox = h('div', { class: 'stack' });

  let methodBox;
  if (current.method !== undefined) {
    const legendId = `${idPrefix}-${METHOD}-legend`;
    const options = variants.map((variant) => {
      const id = `${idPrefix}-${METHOD}-${variant.method}`;
      const input = h('input', { type: 'radio', name: `${idPrefix}-${METHOD}`, id, value: variant.method, checked: variant === current });
      input.addEventListener('change', () => {
        if (!input.checked) return;
        remember();
        current = variant;
        draw();
        onMethodChange?.(variant.method);
      });
      return h('label', { class: 'choice', for: id }, input, variant.methodTitle);
    });
    methodBox = h(
      'fieldset',
      { class: 'field', 'aria-labelledby': legendId, dataset: { field: METHOD } },
      h('legend', { id: legendId }, 'Authentication method'),
      h('div', { class: 'method-choice' }, options),
      h('p', { class: 'field-error', id: `${idPrefix}-${METHOD}-error`, hidden: true }),
    );
  }
  container.classList.add('stack');
  container.replaceChildren(...[methodBox, fieldsBox, formError].filter(Boolean));

  function remember() {
    for (const [name, field] of fields) typed.set(name, field.read());
  }

  function draw() {
    fields = new Map();
    const { properties = {}, required = [] } = current.schema;
    const main = [];
    const advanced = [];
    for (const [name, prop] of Object.entries(properties)) {
      if (name === METHOD) continue;
      const field = drawField({ name, prop, required: required.includes(name), idPrefix, value: typed.get(name) ?? values[name], saved: saved[name], kept: kept.includes(name) });
      fields.set(name, field);
      (prop['x-advanced'] ? advanced : main).push(field.element);
    }
    fieldsBox.replaceChildren(...main);
    if (advanced.length) {
      fieldsBox.append(h('details', { class: 'advanced' }, h('summary', {}, 'Advanced (optional)'), h('div', { class: 'stack' }, advanced)));
    }
    updateVisibility();
  }

  function updateVisibility() {
    const now = Object.fromEntries([...fields].map(([name, field]) => [name, field.read()]));
    for (const [, field] of fields) {
      const when = field.prop['x-show-when'];
      if (!when) continue;
      // Shown while the other field has one of the values (for a list: includes one of them).
      field.element.hidden = !Object.entries(when).every(([other, allowed]) =>
        Array.isArray(now[other]) ? now[other].some((value) => allowed.includes(String(value))) : allowed.includes(String(now[other])),
      );
    }
  }
  container.addEventListener('change', updateVisibility);
  draw();

  return {
    get method() {
      return current.method;
    },
    /** The body to send, or undefined when a field needs attention first (shown beside it). */
    collect() {
      this.clearErrors();
      const body = current.method !== undefined ? { [METHOD]: current.method } : {};
      let problems = 0;
      for (const [name, field] of fields) {
        if (field.element.hidden) continue;
        const checked = field.check();
        if (checked.error) {
          field.setError(checked.error);
          problems += 1;
        } else if (checked.value !== undefined) body[name] = checked.value;
      }
      if (problems) {
        this.focusFirstError();
        return undefined;
      }
      return body;
    },
    /** The API's field problems beside their fields; the rest above the button. Answers how many. */
    showErrors(errors = []) {
      const general = [];
      for (const { path, message } of errors) {
        const name = String(path ?? '').split('.')[0];
        if (name === METHOD && methodBox) setError(methodBox, `${idPrefix}-${METHOD}-error`, message);
        else if (fields.has(name)) fields.get(name).setError(message);
        else general.push(path && path !== '(body)' ? `${path}: ${message}` : message);
      }
      if (general.length) {
        formError.replaceChildren(...general.map((text) => h('p', {}, text)));
        formError.hidden = false;
      }
      this.focusFirstError();
      return errors.length;
    },
    showFormError(text) {
      formError.replaceChildren(h('p', {}, text));
      formError.hidden = false;
    },
    clearErrors() {
      formError.hidden = true;
      for (const [, field] of fields) field.clearError();
      if (methodBox) clearError(methodBox, `${idPrefix}-${METHOD}-error`);
    },
    focusFirstError() {
      const invalid = container.querySelector('[aria-invalid="true"]');
      (invalid?.matches('fieldset') ? invalid.querySelector('input') : invalid)?.focus();
    },
    /** After a successful connect: secrets leave the page; everything else stays as typed. */
    clearSecrets() {
      for (const [, field] of fields) if (field.secret) field.clear();
      for (const [name] of typed) if (current.schema.properties?.[name]?.writeOnly) typed.delete(name);
    },
    fields: () => fields,
  };
}
