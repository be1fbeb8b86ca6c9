// A real browser for the page's tests: Debian's chromium (scripts/setup.sh installs it),
// driven by playwright-core, headless, with a fresh profile and no background traffic.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { chromium, type BrowserContext, type LaunchOptions } from 'playwright-core';

import { repoRoot } from './package.js';

export const CHROMIUM = process.env.QENTROPY_CHROMIUM ?? '/usr/bin/chromium';

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Where tests leave what a person should look at (screenshots); CI keeps it. Not in git. */
export function testOutputDir(...parts: string[]): string {
  const dir = path.join(repoRoot, 'test-output', ...parts);
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** A browser with a new user-data-dir of its own, removed on close. */
export async function launchBrowser(options: Parameters<typeof chromium.launchPersistentContext>[1] = {}): Promise<Browser> {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-chromium-'));
  const launch: LaunchOptions = { executablePath: CHROMIUM, headless: true, args: FLAGS };
  const context = await chromium.launchPersistentContext(profile, { ...launch, ...options });
  return {
    context,
    async close() {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}
