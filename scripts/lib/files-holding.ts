import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * Every regular file under `dir` whose bytes hold `needle`, as paths relative to `dir` (symbolic links are not
 * followed): what a test greps to show text is, or is no longer, anywhere on disk.
 */
export function filesHolding(dir: string, needle: string | Buffer): string[] {
  const bytes = Buffer.from(needle);
  const found: string[] = [];
  const walk = (at: string): void => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      const stat = lstatSync(path);
      if (stat.isDirectory()) walk(path);
      else if (stat.isFile() && readFileSync(path).includes(bytes)) found.push(relative(dir, path));
    }
  };
  walk(dir);
  return found;
}
