// Reads the fenced code blocks of one section of a document under docs/, so a test can run
// a walk-through or write an example config exactly as the documentation gives it.
import fs from 'node:fs';
import path from 'node:path';

import { repoRoot } from './package.js';

/** The ```lang blocks between the `## heading` line (prefix match) and the next `## ` heading. */
export function docBlocks(doc: string, heading: string, lang: string): string[] {
  const text = fs.readFileSync(path.join(repoRoot, 'docs', doc), 'utf8');
  const start = text.split('\n').findIndex((line) => line.startsWith(`## ${heading}`));
  if (start < 0) throw new Error(`docs/${doc} has no section '## ${heading}'`);
  const lines = text.split('\n').slice(start + 1);
  const end = lines.findIndex((line) => line.startsWith('## '));
  const section = (end < 0 ? lines : lines.slice(0, end)).join('\n');
  const blocks = [...section.matchAll(new RegExp('^```' + lang + '\\n([\\s\\S]*?)^```$', 'gm'))].map((m) => m[1]!);
  if (blocks.length === 0) throw new Error(`docs/${doc} '## ${heading}' has no ${lang} block`);
  return blocks;
}
