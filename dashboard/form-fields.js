// One field of a form drawn from a JSON Schema property (forms.js draws the form): the control the property's
// kind calls for, how to read and check it, and where its problems go (beside the field).

import { h, humanize } from './dom.js';

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

export function setError(wrapper, errorId, message) {
  const error = wrapper.querySelector(`#${CSS.escape(errorId)}`);
  error.textContent = error.hidden ? message : `${error.textContent} ${message}`;
  error.hidden = false;
  wrapper.classList.add('has-error');
  const target = wrapper.matches('fieldset') ? wrapper : wrapper.querySelector('input, select, textarea');
  target?.setAttribute('aria-invalid', 'true');
}

export function clearError(wrapper, errorId) {
  const error = wrapper.querySelector(`#${CSS.escape(errorId)}`);
  if (error) {
    error.hidden = true;
    error.textContent = '';
  }
  wrapper.classList.remove('has-error');
  for (const node of [wrapper, ...wrapper.querySelectorAll('[aria-invalid]')]) node.removeAttribute('aria-invalid');
}

/**
 * What every control of one field shares: its ids, title, whether it may be left empty, its current value,
 * and the parts around the control (label, hint, saved-secret note, error line, the field's box or fieldset).
 */
function fieldFrame({ name, prop, required, idPrefix, value, saved, kept }, kind) {
  const id = `${idPrefix}-${name}`;
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const title = titleOf(name, prop);
  const hasDefault = prop.default !== undefined;
  const optional = !required && !hasDefault && !['checkboxes', 'entries', 'boolean'].includes(kind);
  const describedBy = [prop.description || saved ? hintId : undefined, errorId].filter(Boolean).join(' ');
  const error = h('p', { class: 'field-error', id: errorId, hidden: true });
  const frame = {
    name,
    prop,
    kept,
    id,
    errorId,
    title,
    hasDefault,
    optional,
    current: value ?? prop.default,
    describedBy,
    error,
    emptyMessage: `Enter the ${title}.`,
    label: h('label', { for: id }, title, optional ? h('span', { class: 'optional' }, ' (optional)') : ''),
    hint: () => {
      const parts = [];
      if (prop.description) parts.push(h('span', {}, prop.description));
      return parts.length ? h('p', { class: 'hint', id: saved ? undefined : hintId }, parts) : undefined;
    },
    savedNote: () =>
      saved
        ? h('p', { class: 'saved-secret', id: hintId, dataset: { maskedSecret: name } }, `Saved: ${saved}. `, kept ? 'Leave empty to keep it.' : 'Enter it again to reconnect.')
        : undefined,
    fieldBox: (...children) => h('div', { class: 'field', dataset: { field: name } }, ...children),
    group: (controls) => {
      const legendId = `${id}-legend`;
      return h(
        'fieldset',
        { class: 'field', 'aria-labelledby': legendId, 'aria-describedby': describedBy, dataset: { field: name } },
        h('legend', { id: legendId }, title),
        frame.hint(),
        h('div', { class: 'choices' }, controls),
        error,
      );
    },
  };
  return frame;
}

/** Radio buttons: an enum of a few values, or yes/no. */
function choiceControl(f, kind) {
  const { id, prop, current, title, optional, hasDefault } = f;
  const options = kind === 'boolean' ? [true, false] : prop.enum;
  const inputs = options.map((option) => h('input', { type: 'radio', name: id, id: `${id}-${option}`, value: String(option), checked: current !== undefined && String(current) === String(option) }));
  const read = () => {
    const picked = inputs.find((input) => input.checked)?.value;
    if (picked === undefined) return undefined;
    return kind === 'boolean' ? picked === 'true' : picked;
  };
  return {
    element: f.group(inputs.map((input, i) => h('label', { class: 'choice', for: input.id }, input, optionTitle(prop, options[i])))),
    read,
    check: () => {
      const picked = read();
      return picked === undefined && !optional && !hasDefault ? { error: `Choose the ${title}.` } : { value: picked };
    },
    focusTarget: inputs[0],
  };
}

/** A drop-down: an enum of more values. */
function selectControl(f) {
  const { id, name, prop, current, title, optional, hasDefault } = f;
  const select = h(
    'select',
    { id, name, 'aria-describedby': f.describedBy },
    optional || current === undefined ? h('option', { value: '' }, 'Choose…') : undefined,
    prop.enum.map((option) => h('option', { value: option, selected: String(current) === String(option) }, optionTitle(prop, option))),
  );
  const read = () => select.value || undefined;
  return {
    element: f.fieldBox(f.label, f.hint(), select, f.error),
    read,
    check: () => (read() === undefined && !optional && !hasDefault ? { error: `Choose the ${title}.` } : { value: read() }),
    focusTarget: select,
  };
}

/** Check boxes: a list of enum values. */
function checkboxesControl(f) {
  const { id, prop, current, title } = f;
  const options = prop.items.enum;
  const chosen = new Set(Array.isArray(current) ? current : []);
  const inputs = options.map((option) => h('input', { type: 'checkbox', name: id, id: `${id}-${option}`, value: option, checked: chosen.has(option) }));
  const read = () => inputs.filter((input) => input.checked).map((input) => input.value);
  return {
    element: f.group(inputs.map((input, i) => h('label', { class: 'choice', for: input.id }, input, optionTitle(prop, options[i])))),
    read,
    check: () => {
      const list = read();
      if (prop.minItems && list.length < prop.minItems) return { error: `Choose at least one: ${title}.` };
      return { value: list };
    },
    focusTarget: inputs[0],
  };
}

/** One entry row's controls: the key, then the value (a text, a comma-separated list, a check box, or the value's own small fields). */
function entryRowParts(f, n, key, entryValue) {
  const { id, prop } = f;
  const valueSchema = prop.additionalProperties;
  const titles = prop['x-entry-titles'] ?? { key: 'Name', value: 'Value' };
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
  return { keyInput, parts };
}

/** A map edited as rows: the key, then the value. */
function entriesControl(f) {
  const { id, prop, current } = f;
  const rows = h('div', { class: 'entries' });
  const valueSchema = prop.additionalProperties;
  const titles = prop['x-entry-titles'] ?? { key: 'Name', value: 'Value' };
  let count = 0;
  const addRow = (key = '', entryValue = undefined) => {
    const n = ++count;
    const { keyInput, parts } = entryRowParts(f, n, key, entryValue);
    const row = h('div', { class: 'entry' }, ...parts, h('button', { type: 'button', class: 'small', 'aria-label': `Remove ${titles.key} row ${n}`, onclick: () => row.remove() }, 'Remove'));
    rows.append(row);
    return keyInput;
  };
  for (const [key, entryValue] of Object.entries(current ?? {})) addRow(key, entryValue);
  const add = h('button', { type: 'button', class: 'small', onclick: () => addRow().focus() }, `Add a ${titles.key.toLowerCase()}`);
  const element = f.group([rows, add]);
  element.querySelector('.choices').className = 'stack';
  const readRow = (row) => {
    const key = row.querySelector('[data-part="key"]').value.trim();
    const inputs = [...row.querySelectorAll('[data-kind]')];
    const valueOf = (input) => (input.dataset.kind === 'boolean' ? input.checked : input.dataset.kind === 'list' ? input.value.split(',').map((item) => item.trim()).filter(Boolean) : input.value.trim());
    const value = valueSchema.type === 'object' ? Object.fromEntries(inputs.map((input) => [input.dataset.part, valueOf(input)])) : valueOf(inputs[0]);
    const texts = inputs.filter((input) => input.dataset.kind === 'text');
    return { key, value, filled: Boolean(key) || texts.some((input) => input.value.trim()), complete: Boolean(key) && texts.every((input) => input.value.trim() || !(valueSchema.required ?? ['']).includes(input.dataset.part)) };
  };
  const read = () => [...rows.querySelectorAll('.entry')].map(readRow);
  return {
    element,
    read,
    check: () => {
      const entries = read().filter((entry) => entry.filled);
      if (entries.some((entry) => !entry.complete)) return { error: `Fill in the ${titles.key.toLowerCase()} and its ${valueSchema.type === 'object' ? 'fields' : titles.value.toLowerCase()}, or remove the row.` };
      return { value: Object.fromEntries(entries.map((entry) => [entry.key, entry.value])) };
    },
    focusTarget: add,
  };
}

function numberControl(f) {
  const { id, name, prop, current, title, optional, hasDefault } = f;
  const input = h('input', { type: 'number', id, name, inputmode: 'numeric', value: current ?? '', min: prop.minimum > -1e15 ? prop.minimum : undefined, max: prop.maximum < 1e15 ? prop.maximum : undefined, step: prop.type === 'integer' ? 1 : 'any', 'aria-describedby': f.describedBy });
  return {
    element: f.fieldBox(f.label, f.hint(), input, f.error),
    read: () => input.value,
    check: () => {
      if (input.validity.badInput) return { error: `The ${title} is a number.` };
      if (input.value === '') return optional || hasDefault ? { value: undefined } : { error: f.emptyMessage };
      return { value: Number(input.value) };
    },
    focusTarget: input,
  };
}

/** A private key is several lines: a textarea whose characters are masked, or a file chosen from disk. */
function pemControl(f) {
  const { id, name, title, optional, kept } = f;
  const area = h('textarea', { id, name, class: 'masked', rows: 6, spellcheck: 'false', autocomplete: 'off', autocapitalize: 'off', 'aria-describedby': f.describedBy, placeholder: '-----BEGIN PRIVATE KEY-----' });
  const fileId = `${id}-file`;
  const file = h('input', { type: 'file', id: fileId, accept: '.pem,.key,.txt', class: 'file-pick' });
  file.addEventListener('change', async () => {
    const chosen = file.files?.[0];
    if (chosen) area.value = await chosen.text();
    file.value = '';
  });
  return {
    element: f.fieldBox(f.label, f.hint(), f.savedNote(), area, h('label', { for: fileId, class: 'hint' }, `Or read the ${title} from a file`), file, f.error),
    read: () => area.value,
    check: () => (area.value.trim() === '' ? (optional || kept ? { value: undefined } : { error: f.emptyMessage }) : { value: area.value }),
    clear: () => (area.value = ''),
    focusTarget: area,
  };
}

/** One line of text; a secret is a password field, never filled in again. */
function textControl(f, kind) {
  const { id, name, current, optional, kept } = f;
  const secret = kind === 'secret';
  // new-password: browsers neither fill in nor offer to remember these keys.
  const input = h('input', { type: secret ? 'password' : 'text', id, name, value: secret ? '' : (current ?? ''), autocomplete: secret ? 'new-password' : 'off', spellcheck: 'false', autocapitalize: 'off', 'aria-describedby': f.describedBy });
  return {
    element: f.fieldBox(f.label, f.hint(), secret ? f.savedNote() : undefined, input, f.error),
    read: () => input.value,
    check: () => {
      const text = input.value.trim();
      if (text === '') return optional || (secret && kept) ? { value: undefined } : { error: f.emptyMessage };
      return { value: text };
    },
    ...(secret ? { clear: () => (input.value = '') } : {}),
    focusTarget: input,
  };
}

function constControl(f) {
  return { element: h('span', { hidden: true }), read: () => f.prop.const, check: () => ({ value: f.prop.const }) };
}

/** A shape this page does not know yet: edit it as JSON (the API still validates it). */
function jsonControl(f) {
  const { id, name, current, title } = f;
  const area = h('textarea', { id, name, rows: 5, spellcheck: 'false', 'aria-describedby': f.describedBy }, JSON.stringify(current ?? null, null, 2));
  return {
    element: f.fieldBox(f.label, f.hint(), area, f.error),
    read: () => area.value,
    check: () => {
      try {
        return { value: JSON.parse(area.value) };
      } catch {
        return { error: `The ${title} is not valid JSON.` };
      }
    },
    focusTarget: area,
  };
}

const CONTROLS = {
  radio: choiceControl,
  boolean: choiceControl,
  select: selectControl,
  checkboxes: checkboxesControl,
  entries: entriesControl,
  number: numberControl,
  pem: pemControl,
  secret: textControl,
  text: textControl,
  const: constControl,
  json: jsonControl,
};

/** One field: its element, how to read and check it, and where its problems go. */
export function drawField(options) {
  const kind = kindOf(options.prop);
  const frame = fieldFrame(options, kind);
  const { element, read, check, clear = () => undefined, focusTarget } = CONTROLS[kind](frame, kind);
  return {
    name: options.name,
    prop: options.prop,
    element,
    secret: kind === 'secret' || kind === 'pem',
    read,
    check,
    clear,
    focus: () => focusTarget?.focus(),
    setError: (message) => setError(element, frame.errorId, message),
    clearError: () => clearError(element, frame.errorId),
  };
}
