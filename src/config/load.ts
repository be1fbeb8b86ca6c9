// Loads the daemon config: defaults < JSON file < QENTROPY_* environment < CLI flags,
// then validates the merged result, naming the key (and the variable it came from) of
// every problem. See docs/config.md.
import fs from 'node:fs';
import path from 'node:path';

import { parseStorageUrl } from '../storage/db.js';
import { ConfigError, ConfigNode } from './node.js';
import { resolvePathsIn, type PathKeys } from './paths.js';
import type { ConfigSection, EnvValueType } from './section.js';
import { ROLE_SECTIONS, type EntropyConfig, type FeederConfig, type KmeConfig, type QualityConfig } from './sections/index.js';

export const DEFAULT_CONFIG_FILE = '/etc/qentropy/qentropy.json';
export const DEFAULT_STATE_DIR = '/var/lib/qentropy';
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface QentropyConfig {
  /** Directory for state (database, keys); default /var/lib/qentropy. */
  stateDir: string;
  storage: { url: string };
  log: { level: LogLevel };
  entropy: EntropyConfig;
  quality: QualityConfig;
  kme: KmeConfig | { enabled: false };
  feeder: FeederConfig;
  /** The file the config was read from, if any. */
  file: string | undefined;
}

export interface LoadConfigOptions {
  /** Config file; default $QENTROPY_CONFIG, then /etc/qentropy/qentropy.json (optional when defaulted). */
  file?: string;
  /** Environment to read QENTROPY_* from (default process.env). */
  env?: Record<string, string | undefined>;
  /** Values from CLI flags by dotted key path, e.g. {'storage.url': '...'}; applied last. */
  overrides?: Record<string, unknown>;
}

/** Top-level keys besides the role sections. */
const CORE_KEYS = ['stateDir', 'storage', 'log'];
const CORE_ENV: Record<string, EnvValueType> = { stateDir: 'string', 'storage.url': 'string', 'log.level': 'string' };
const CORE_PATHS: PathKeys = { 'storage.url': 'storage-url' };

/** Makes the relative paths of a config file absolute, against the file's folder (docs/config.md). */
function resolveFilePaths(raw: unknown, file: string): void {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return;
  const baseDir = path.dirname(path.resolve(file));
  resolvePathsIn(raw, CORE_PATHS, baseDir);
  for (const section of ROLE_SECTIONS as readonly ConfigSection<unknown>[]) {
    if (section.paths) resolvePathsIn((raw as Record<string, unknown>)[section.key], section.paths, baseDir);
  }
}

/** `entropy.pool.capacityBytes` -> `QENTROPY_ENTROPY_POOL_CAPACITY_BYTES`. */
export function envNameFor(keyPath: string): string {
  return `QENTROPY_${keyPath
    .split('.')
    .map((seg) => seg.replace(/([a-z0-9])([A-Z])/g, '$1_$2'))
    .join('_')
    .toUpperCase()}`;
}

/** Every environment variable the config honours, with the key it sets and its type. */
export function environmentVariables(): Array<{ name: string; key: string; type: EnvValueType }> {
  const all: Array<{ name: string; key: string; type: EnvValueType }> = [];
  for (const [key, type] of Object.entries(CORE_ENV)) all.push({ name: envNameFor(key), key, type });
  for (const section of ROLE_SECTIONS as readonly ConfigSection<unknown>[]) {
    for (const [rel, type] of Object.entries(section.env ?? {})) {
      const key = `${section.key}.${rel}`;
      all.push({ name: envNameFor(key), key, type });
    }
  }
  return all;
}

function coerce(text: string, type: EnvValueType): unknown {
  switch (type) {
    case 'string':
      return text;
    case 'integer':
    case 'number':
      // Left as text when not numeric, so validation reports it with the variable's name.
      return /^-?[0-9]+(\.[0-9]+)?$/.test(text.trim()) ? Number(text.trim()) : text;
    case 'boolean':
      return text === 'true' ? true : text === 'false' ? false : text;
  }
}

function setPath(target: Record<string, unknown>, keyPath: string, value: unknown): void {
  const parts = keyPath.split('.');
  let obj = target;
  for (const part of parts.slice(0, -1)) {
    const next = obj[part];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) obj[part] = {};
    obj = obj[part] as Record<string, unknown>;
  }
  obj[parts[parts.length - 1]!] = value;
}

function readConfigFile(file: string, required: boolean): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !required) return {};
    throw new ConfigError([`cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : (err as Error).message}`]);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new ConfigError([`${file} is not valid JSON: ${(err as Error).message}`]);
  }
}

/** Reads, merges and validates the config; throws ConfigError listing every problem. */
export function loadConfig(options: LoadConfigOptions = {}): QentropyConfig {
  const env = options.env ?? process.env;
  const explicit = options.file ?? env.QENTROPY_CONFIG;
  const file = explicit ?? DEFAULT_CONFIG_FILE;
  const raw = readConfigFile(file, explicit !== undefined);
  const usedFile = explicit !== undefined || fs.existsSync(file) ? file : undefined;
  if (usedFile !== undefined) resolveFilePaths(raw, usedFile);
  return resolveConfig(raw, { env, overrides: options.overrides ?? {}, file: usedFile });
}

/** Validates an already-parsed config object (with env and overrides applied on top). */
export function resolveConfig(
  raw: unknown,
  options: { env?: Record<string, string | undefined>; overrides?: Record<string, unknown>; file?: string | undefined } = {},
): QentropyConfig {
  const problems: string[] = [];
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError([`the config must be a JSON object, got ${Array.isArray(raw) ? 'an array' : typeof raw}`]);
  }
  const merged = structuredClone(raw) as Record<string, unknown>;
  const origins = new Map<string, string>();
  for (const { name, key, type } of environmentVariables()) {
    const text = options.env?.[name];
    if (text === undefined) continue;
    setPath(merged, key, coerce(text, type));
    origins.set(key, name);
  }
  for (const [key, value] of Object.entries(options.overrides ?? {})) {
    if (value === undefined) continue;
    setPath(merged, key, value);
    origins.set(key, 'the command line');
  }

  const root = new ConfigNode(merged, '', problems, (p) => origins.get(p));
  const sectionKeys = ROLE_SECTIONS.map((s) => s.key);
  for (const key of root.keys()) {
    if (key.startsWith('$')) continue; // "$comment", "$schema": notes for humans and editors
    if (!CORE_KEYS.includes(key) && !sectionKeys.includes(key as (typeof sectionKeys)[number])) {
      root.child(key).fail(`unknown key (known: ${[...CORE_KEYS, ...sectionKeys].join(', ')})`);
    }
  }

  const stateDirNode = root.child('stateDir');
  let stateDir = stateDirNode.string(DEFAULT_STATE_DIR);
  if (!path.isAbsolute(stateDir)) {
    stateDirNode.fail(`must be an absolute path, got ${JSON.stringify(stateDir)}`);
    stateDir = DEFAULT_STATE_DIR;
  }

  const storageNode = root.child('storage').object(['url']);
  const urlNode = storageNode.child('url');
  const url = urlNode.string(`sqlite:${path.join(stateDir, 'qentropy.db')}`);
  try {
    parseStorageUrl(url);
  } catch (err) {
    urlNode.fail((err as Error).message);
  }

  const logNode = root.child('log').object(['level']);
  const level = logNode.child('level').oneOf(LOG_LEVELS, 'info');

  const context = { stateDir };
  const [entropy, quality, kme, feeder] = ROLE_SECTIONS.map((section) =>
    (section as ConfigSection<unknown>).validate(root.child(section.key), context),
  ) as [EntropyConfig, QualityConfig, KmeConfig | { enabled: false }, FeederConfig];

  if (problems.length > 0) throw new ConfigError(problems);
  return { stateDir, storage: { url }, log: { level }, entropy, quality, kme, feeder, file: options.file };
}
