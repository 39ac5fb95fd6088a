import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import ts from 'typescript';

/**
 * The project's import graph as TypeScript resolves it (type-only imports included: a circle of
 * types is still two files that cannot be read apart), limited to files under `folders`.
 */
export function importGraph(root: string, folders: readonly string[]): Map<string, string[]> {
  const config = ts.getParsedCommandLineOfConfigFile(resolve(root, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
  if (!config) throw new Error('tsconfig.json could not be read');
  const inside = (file: string) => folders.some((folder) => relative(resolve(root, folder), file).split(/[\\/]/)[0] !== '..');
  const files = config.fileNames.filter((file) => inside(file) && /\.tsx?$/.test(file));
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const imports = ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles;
    const targets = imports
      .map(({ fileName }) => ts.resolveModuleName(fileName, file, config.options, ts.sys).resolvedModule?.resolvedFileName)
      .filter((target): target is string => target !== undefined && !target.includes('node_modules') && inside(target));
    graph.set(relative(root, file), [...new Set(targets.map((target) => relative(root, target)))]);
  }
  return graph;
}

/** Every strongly connected group of two or more files (or a file importing itself): Tarjan's algorithm. */
export function importCircles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (file: string) => {
    index.set(file, counter);
    low.set(file, counter);
    counter += 1;
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, index.get(next)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== file);
    if (group.length > 1 || (graph.get(file) ?? []).includes(file)) circles.push(group.sort());
  }
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return circles;
}
