import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = join(__dirname, '../..');
const REMARK = join(ROOT, 'node_modules/.bin/remark');

/** remark-validate-links (package.json's remarkConfig), as `npx remark --frail --quiet --no-stdout <paths>` runs it. */
async function linkProblems(cwd: string, paths: string[]): Promise<{ failed: boolean; report: string }> {
  try {
    const { stderr } = await promisify(execFile)(REMARK, ['--rc-path', join(ROOT, 'package.json'), '--no-color', '--frail', '--quiet', '--no-stdout', ...paths], { cwd, encoding: 'utf8' });
    return { failed: false, report: stderr };
  } catch (error) {
    return { failed: true, report: String((error as { stderr?: string }).stderr ?? error) };
  }
}

describe('the docs a newcomer walks', () => {
  it('every link in the README and docs/ reaches a file that exists and, where it names one, a heading in it', async () => {
    const { failed, report } = await linkProblems(ROOT, ['README.md', 'docs']);
    expect(report).toBe('');
    expect(failed).toBe(false);
  });

  it('the check refuses a missing file, a missing heading and a heading missing from another file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'doc-links-'));
    try {
      writeFileSync(join(dir, 'other.md'), '# Other\n\n## Here\n');
      writeFileSync(join(dir, 'page.md'), '# Page\n\n[fine](other.md#here) [gone](missing.md) [nowhere](#nowhere) [not there](other.md#there)\n');
      const { failed, report } = await linkProblems(dir, ['page.md', 'other.md']);
      expect(failed).toBe(true);
      expect(report).toContain('Cannot find file `missing.md`');
      expect(report).toContain('Cannot find heading for `#nowhere`');
      expect(report).toContain('Cannot find heading for `#there` in `other.md`');
      expect(report).not.toContain('`#here`');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
