// Forms drawn from the JSON Schemas that GET /api/v1/connectors publishes (the same zod schemas the API
// validates with), so each connector's Connect Account and sync settings forms offer exactly the fields the
// gateway accepts, in the spec's words (shared/connections/form-fields.ts lists the keywords read here).
// Problems come back from the API per field (`errors[].path`) and are shown beside that field.

import { h, humanize } from './dom.js';

const METHOD = 'authenticationMethod';

/** The kind of control a property is drawn with. */
function kindOf(prop) {
  if (prop.const !== undefined) return 'const';
  if (Array.isArray(prop.enum)) return prop.enum.length <= 4 ? 'radio' : 'select';
  if (prop.type === 'boolean') return 'boolean';
  if (prop.type === 'array' && Array.isArray(prop.items?.enum)) return 'checkboxes';
  if (prop.type === 'object' && ['string', 'object'].includes(prop.additionalProperties?.type)) return 'entries';
  if (prop.type === 'integer' || prop.type === 'number') return 'number';
  if (prop.type === 'string' && prop.contentMediaType === 'application/x-pem-file') return 'pem';
  if (prop.type === 'string' && prop.writeOnly) return 'secret';
  if (prop.type === 'string') return 'text';
  return 'json';
}

const optionTitle = (prop, value) => prop['x-option-titles']?.[String(value)] ?? humanize(value);
const titleOf = (name, prop) => prop.title ?? humanize(name);

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

function setError(wrapper, errorId, message) {
  const error = wrapper.querySelector(`#${CSS.escape(errorId)}`);
  error.textContent = error.hidden ? message : `${error.textContent} ${message}`;
  error.hidden = false;
  wrapper.classList.add('has-error');
  const target = wrapper.matches('fieldset') ? wrapper : wrapper.querySelector('input, select, textarea');
  target?.setAttribute('aria-invalid', 'true');
}

function clearError(wrapper, errorId) {
  const error = wrapper.querySelector(`#${CSS.escape(errorId)}`);
  if (error) {
    error.hidden = true;
    error.textContent = '';
  }
  wrapper.classList.remove('has-error');
  for (const node of [wrapper, ...wrapper.querySelectorAll('[aria-invalid]')]) node.removeAttribute('aria-invalid');
}

/** One field: its element, how to read and check it, and where its problems go. */
function drawField({ name, prop, required, idPrefix, value, saved, kept }) {
  const kind = kindOf(prop);
  const id = `${idPrefix}-${name}`;
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const title = titleOf(name, prop);
  const hasDefault = prop.default !== undefined;
  const optional = !required && !hasDefault && !['checkboxes', 'entries', 'boolean'].includes(kind);
  const current = value ?? prop.default;
  const describedBy = [prop.description || saved ? hintId : undefined, errorId].filter(Boolean).join(' ');
  const hint = () => {
    const parts = [];
    if (prop.description) parts.push(h('span', {}, prop.description));
    return parts.length ? h('p', { class: 'hint', id: saved ? undefined : hintId }, parts) : undefined;
  };
  const savedNote = () =>
    saved
      ? h('p', { class: 'saved-secret', id: hintId, dataset: { maskedSecret: name } }, `Saved: ${saved}. `, kept ? 'Leave empty to keep it.' : 'Enter it again to reconnect.')
      : undefined;
  const error = h('p', { class: 'field-error', id: errorId, hidden: true });
  const label = h('label', { for: id }, title, optional ? h('span', { class: 'optional' }, ' (optional)') : '');
  const fieldBox = (...children) => h('div', { class: 'field', dataset: { field: name } }, ...children);
  const group = (controls) => {
    const legendId = `${id}-legend`;
    return h(
      'fieldset',
      { class: 'field', 'aria-labelledby': legendId, 'aria-describedby': describedBy, dataset: { field: name } },
      h('legend', { id: legendId }, title),
      hint(),
      h('div', { class: 'choices' }, controls),
      error,
    );
  };

  let element;
  let read;
  let check;
  let clear = () => undefined;
  let focusTarget;
  const emptyMessage = `Enter the ${title}.`;

  switch (kind) {
    case 'radio':
    case 'boolean': {
      const options = kind === 'boolean' ? [true, false] : prop.enum;
      const inputs = options.map((option) => h('input', { type: 'radio', name: id, id: `${id}-${option}`, value: String(option), checked: current !== undefined && String(current) === String(option) }));
      element = group(inputs.map((input, i) => h('label', { class: 'choice', for: input.id }, input, optionTitle(prop, options[i]))));
      read = () => {
        const picked = inputs.find((input) => input.checked)?.value;
        if (picked === undefined) return undefined;
        return kind === 'boolean' ? picked === 'true' : picked;
      };
      check = () => {
        const picked = read();
        return picked === undefined && !optional && !hasDefault ? { error: `Choose the ${title}.` } : { value: picked };
      };
      focusTarget = inputs[0];
      break;
    }
    case 'select': {
      const select = h(
        'select',
        { id, name, 'aria-describedby': describedBy },
        optional || current === undefined ? h('option', { value: '' }, 'Choose…') : undefined,
        prop.enum.map((option) => h('option', { value: option, selected: String(current) === String(option) }, optionTitle(prop, option))),
      );
      element = fieldBox(label, hint(), select, error);
      read = () => select.value || undefined;
      check = () => (read() === undefined && !optional && !hasDefault ? { error: `Choose the ${title}.` } : { value: read() });
      focusTarget = select;
      break;
    }
    case 'checkboxes': {
      const options = prop.items.enum;
      const chosen = new Set(Array.isArray(current) ? current : []);
      const inputs = options.map((option) => h('input', { type: 'checkbox', name: id, id: `${id}-${option}`, value: option, checked: chosen.has(option) }));
      element = group(inputs.map((input, i) => h('label', { class: 'choice', for: input.id }, input, optionTitle(prop, options[i]))));
      read = () => inputs.filter((input) => input.checked).map((input) => input.value);
      check = () => {
        const list = read();
        if (prop.minItems && list.length < prop.minItems) return { error: `Choose at least one: ${title}.` };
        return { value: list };
      };
      focusTarget = inputs[0];
      break;
    }
    case 'entries': {
      // A map edited as rows: the key, then the value (a text, or the value's own small fields).
      const rows = h('div', { class: 'entries' });
      const valueSchema = prop.additionalProperties;
      const titles = prop['x-entry-titles'] ?? { key: 'Name', value: 'Value' };
      let count = 0;
      const addRow = (key = '', entryValue = undefined) => {
        const n = ++count;
        const keyInput = h('input', { type: 'text', id: `${id}-key-${n}`, value: key, maxlength: prop.propertyNames?.maxLength ?? 80, dataset: { part: 'key' } });
        const parts = [h('div', { class: 'field' }, h('label', { for: keyInput.id }, titles.key), keyInput)];
        const valueFields = valueSchema.type === 'object' ? Object.entries(valueSchema.properties ?? {}) : [['', { ...valueSchema, title: titles.value }]];
        for (const [part, partSchema] of valueFields) {
          const partId = `${id}-value-${n}${part ? `-${part}` : ''}`;
          const current = part ? entryValue?.[part] : entryValue;
          const partTitle = partSchema.title ?? humanize(part);
          if (partSchema.type === 'boolean') {
            const box = h('input', { type: 'checkbox', id: partId, checked: current ?? partSchema.default ?? false, dataset: { part, kind: 'boolean' } });
            parts.push(h('label', { class: 'choice', for: partId }, box, partTitle));
          } else {
            // Text; a list of texts is written comma-separated.
            const list = partSchema.type === 'array';
            const input = h('input', { type: 'text', id: partId, value: list ? (current ?? []).join(', ') : (current ?? ''), dataset: { part, kind: list ? 'list' : 'text' } });
            parts.push(h('div', { class: 'field' }, h('label', { for: partId }, list ? `${partTitle} (comma-separated)` : partTitle), input));
          }
        }
        const row = h('div', { class: 'entry' }, ...parts, h('button', { type: 'button', class: 'small', 'aria-label': `Remove ${titles.key} row ${n}`, onclick: () => row.remove() }, 'Remove'));
        rows.append(row);
        return keyInput;
      };
      for (const [key, entryValue] of Object.entries(current ?? {})) addRow(key, entryValue);
      const add = h('button', { type: 'button', class: 'small', onclick: () => addRow().focus() }, `Add a ${titles.key.toLowerCase()}`);
      element = group([rows, add]);
      element.querySelector('.choices').className = 'stack';
      const readRow = (row) => {
        const key = row.querySelector('[data-part="key"]').value.trim();
        const inputs = [...row.querySelectorAll('[data-kind]')];
        const valueOf = (input) => (input.dataset.kind === 'boolean' ? input.checked : input.dataset.kind === 'list' ? input.value.split(',').map((item) => item.trim()).filter(Boolean) : input.value.trim());
        const value = valueSchema.type === 'object' ? Object.fromEntries(inputs.map((input) => [input.dataset.part, valueOf(input)])) : valueOf(inputs[0]);
        const texts = inputs.filter((input) => input.dataset.kind === 'text');
        return { key, value, filled: Boolean(key) || texts.some((input) => input.value.trim()), complete: Boolean(key) && texts.every((input) => input.value.trim() || !(valueSchema.required ?? ['']).includes(input.dataset.part)) };
      };
      read = () => [...rows.querySelectorAll('.entry')].map(readRow);
      check = () => {
        const entries = read().filter((entry) => entry.filled);
        if (entries.some((entry) => !entry.complete)) return { error: `Fill in the ${titles.key.toLowerCase()} and its ${valueSchema.type === 'object' ? 'fields' : titles.value.toLowerCase()}, or remove the row.` };
        return { value: Object.fromEntries(entries.map((entry) => [entry.key, entry.value])) };
      };
      focusTarget = add;
      break;
    }
    case 'number': {
      const input = h('input', { type: 'number', id, name, inputmode: 'numeric', value: current ?? '', min: prop.minimum > -1e15 ? prop.minimum : undefined, max: prop.maximum < 1e15 ? prop.maximum : undefined, step: prop.type === 'integer' ? 1 : 'any', 'aria-describedby': describedBy });
      element = fieldBox(label, hint(), input, error);
      read = () => input.value;
      check = () => {
        if (input.validity.badInput) return { error: `The ${title} is a number.` };
        if (input.value === '') return optional || hasDefault ? { value: undefined } : { error: emptyMessage };
        return { value: Number(input.value) };
      };
      focusTarget = input;
      break;
    }
    case 'pem': {
      // A private key is several lines: a textarea whose characters are masked, or a file chosen from disk.
      const area = h('textarea', { id, name, class: 'masked', rows: 6, spellcheck: 'false', autocomplete: 'off', autocapitalize: 'off', 'aria-describedby': describedBy, placeholder: '-----BEGIN PRIVATE KEY-----' });
      const fileId = `${id}-file`;
      const file = h('input', { type: 'file', id: fileId, accept: '.pem,.key,.txt', class: 'file-pick' });
      file.addEventListener('change', async () => {
        const chosen = file.files?.[0];
        if (chosen) area.value = await chosen.text();
        file.value = '';
      });
      element = fieldBox(label, hint(), savedNote(), area, h('label', { for: fileId, class: 'hint' }, `Or read the ${title} from a file`), file, error);
      read = () => area.value;
      check = () => (area.value.trim() === '' ? (optional || kept ? { value: undefined } : { error: emptyMessage }) : { value: area.value });
      clear = () => (area.value = '');
      focusTarget = area;
      break;
    }
    case 'secret':
    case 'text': {
      const secret = kind === 'secret';
      // new-password: browsers neither fill in nor offer to remember these keys.
      const input = h('input', { type: secret ? 'password' : 'text', id, name, value: secret ? '' : (current ?? ''), autocomplete: secret ? 'new-password' : 'off', spellcheck: 'false', autocapitalize: 'off', 'aria-describedby': describedBy });
      element = fieldBox(label, hint(), secret ? savedNote() : undefined, input, error);
      read = () => input.value;
      check = () => {
        const text = input.value.trim();
        if (text === '') return optional || (secret && kept) ? { value: undefined } : { error: emptyMessage };
        return { value: text };
      };
      if (secret) clear = () => (input.value = '');
      focusTarget = input;
      break;
    }
    case 'const': {
      element = h('span', { hidden: true });
      read = () => prop.const;
      check = () => ({ value: prop.const });
      break;
    }
    default: {
      // A shape this page does not know yet: edit it as JSON (the API still validates it).
      const area = h('textarea', { id, name, rows: 5, spellcheck: 'false', 'aria-describedby': describedBy }, JSON.stringify(current ?? null, null, 2));
      element = fieldBox(label, hint(), area, error);
      read = () => area.value;
      check = () => {
        try {
          return { value: JSON.parse(area.value) };
        } catch {
          return { error: `The ${title} is not valid JSON.` };
        }
      };
      focusTarget = area;
    }
  }

  return {
    name,
    prop,
    element,
    secret: kind === 'secret' || kind === 'pem',
    read,
    check,
    clear,
    focus: () => focusTarget?.focus(),
    setError: (message) => setError(element, errorId, message),
    clearError: () => clearError(element, errorId),
  };
}
