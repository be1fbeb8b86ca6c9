// The role sections of qentropy.json. Each lives in its own file, owned by its role; this
// list is the only place that names them all.
import { sectionFromParser } from '../section.js';
import { entropySection } from './entropy.js';
import { feederSection } from './feeder.js';
import { KME_ENV, KME_PATHS, parseKmeConfig } from './kme.js';
import { qualitySection } from './quality.js';

/** The kme role parses its own section (throwing on the first problem); absent = disabled. */
export const kmeSection = { ...sectionFromParser('kme', parseKmeConfig, { enabled: false as const }), paths: KME_PATHS, env: KME_ENV };

export const ROLE_SECTIONS = [entropySection, qualitySection, kmeSection, feederSection] as const;

export type { EntropyConfig } from './entropy.js';
export type { FeederConfig } from './feeder.js';
export type { KmeConfig } from './kme.js';
export type { QualityConfig } from './quality.js';
