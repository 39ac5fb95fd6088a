import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const DIR = new URL('.', import.meta.url).pathname;
const JSON_PATH = join(DIR, 'results.json');
const MD_PATH = join(DIR, 'results.md');

export type Figures = Record<string, number>;

/** The figures a part's last run left in bench/results.json that `keep` accepts (a part re-running one scenario keeps the rest). */
export function previousFigures(part: string, keep: (key: string) => boolean): Figures {
  try {
    const all = JSON.parse(readFileSync(JSON_PATH, 'utf8')) as Figures;
    return Object.fromEntries(Object.entries(all).filter(([key]) => key.startsWith(`${part}.`) && keep(key)));
  } catch {
    return {};
  }
}

/** Merges a part's figures into bench/results.json (flat keys) and rewrites results.md from it. */
export function saveFigures(part: string, figures: Figures, notes: string[] = []): void {
  let all: Figures = {};
  try {
    all = JSON.parse(readFileSync(JSON_PATH, 'utf8')) as Figures;
  } catch {
    // First run: no results yet.
  }
  for (const key of Object.keys(all)) if (key.startsWith(`${part}.`)) delete all[key];
  Object.assign(all, figures);
  const sorted = Object.fromEntries(Object.entries(all).sort(([a], [b]) => a.localeCompare(b)));
  writeFileSync(JSON_PATH, `${JSON.stringify(sorted, null, 2)}\n`);

  let notesByPart: Record<string, string[]> = {};
  try {
    notesByPart = JSON.parse(readFileSync(join(DIR, '.notes.json'), 'utf8')) as Record<string, string[]>;
  } catch {
    // none yet
  }
  notesByPart[part] = notes;
  writeFileSync(join(DIR, '.notes.json'), `${JSON.stringify(notesByPart, null, 2)}\n`);

  const parts = [...new Set(Object.keys(sorted).map((key) => key.split('.')[0]!))];
  const lines = ['# Benchmark results', '', `Written by \`npm run bench\` on ${new Date().toISOString()}. Machine: ${process.arch}, Node ${process.version}.`, ''];
  for (const name of parts) {
    lines.push(`## ${name}`, '');
    for (const note of notesByPart[name] ?? []) lines.push(note);
    if ((notesByPart[name] ?? []).length) lines.push('');
    lines.push('| figure | value |', '|---|---|');
    for (const [key, value] of Object.entries(sorted)) if (key.startsWith(`${name}.`)) lines.push(`| ${key} | ${value} |`);
    lines.push('');
  }
  writeFileSync(MD_PATH, lines.join('\n'));
}
