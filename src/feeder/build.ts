// Makes a Feeder from the validated `feeder` config section: reads token, CA and PIN
// files (the secrets never pass through the config object or a log line) and creates
// the sinks. Errors name the config key and the file.
import fs from 'node:fs/promises';

import type { Logger } from 'pino';

import type { FeederConfig } from '../config/sections/feeder.js';
import { insecureHttpWarning, isInsecureRemoteHttp } from '../config/insecure-http.js';
import { readPrivateFile } from '../config/private-file.js';
import { cappedCredit, healthMinEntropy, readAssessment } from '../ea/index.js';
import type { FeedBuffer } from './buffer.js';
import { Feeder } from './feeder.js';
import type { FeederLedger } from './ledger.js';
import { FileSink } from './sinks/file.js';
import { KernelSink } from './sinks/kernel.js';
import { Pkcs11FeedSink } from './sinks/pkcs11.js';
import type { Sink } from './sinks/types.js';
import type { FeederSourceOptions } from './source.js';

/** Reads a token or PIN file (0600: refused when others may read it). */
async function readSecret(file: string, key: string, what: 'token file' | 'PIN file'): Promise<string> {
  let text: string;
  try {
    text = (await readPrivateFile(what, file)).toString('utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(`${key}: ${code ? `cannot read ${file}: ${code}` : (err as Error).message}`);
  }
  const value = text.trim();
  if (!value) throw new Error(`${key}: ${file} is empty`);
  return value;
}

export interface BuildFeederOptions {
  logger: Logger;
  buffer: FeedBuffer;
  /** Client retry tuning (tests shorten the backoff). */
  retry?: FeederSourceOptions['retry'];
  reopenAfterMs?: number;
  processMetrics?: boolean;
  /** Counters per process life, kept across reloads (see ledger.ts). */
  ledger?: FeederLedger;
}

export async function buildFeeder(config: FeederConfig, options: BuildFeederOptions): Promise<Feeder> {
  // An SP 800-90B assessment of the source, when configured, sets the health tests' H and
  // caps what the kernel is told the bytes are worth.
  const assessed = config.health.assessment ? await readAssessment(config.health.assessment, 'feeder.health.assessment') : undefined;
  const sources: FeederSourceOptions[] = [];
  for (const [i, src] of config.sources.entries()) {
    if (src.allowInsecureHttp && isInsecureRemoteHttp(src.url)) options.logger.warn(insecureHttpWarning(`feeder.sources.${i}`, src.url));
    const token = src.tokenFile ? await readSecret(src.tokenFile, `feeder.sources.${i}.tokenFile`, 'token file') : src.token!;
    const ca = src.caFile
      ? await fs.readFile(src.caFile).catch((err: NodeJS.ErrnoException) => {
          throw new Error(`feeder.sources.${i}.caFile: cannot read ${src.caFile}: ${err.code ?? err.message}`);
        })
      : undefined;
    // The source's own assessment, else the shared one: its health-test H, and what the
    // combining mode credits it with (nothing, without any).
    const own = src.assessment ? await readAssessment(src.assessment, `feeder.sources.${i}.assessment`) : assessed;
    sources.push({
      url: src.url,
      token,
      ...(ca ? { ca } : {}),
      blocksPerRequest: src.blocksPerRequest,
      ...(src.tlsGroups ? { tlsGroups: src.tlsGroups } : {}),
      minEntropyPerByte: healthMinEntropy(config.health.minEntropyPerByte, own),
      ...(own !== undefined ? { assessedMinEntropyPerByte: own } : {}),
      fips140: config.health.fips140,
      failureLimit: config.health.failureLimit,
      retryAfterMs: config.health.retryAfterMs,
      ...(options.retry ? { retry: options.retry } : {}),
    });
  }
  const sinks: Sink[] = [];
  if (config.kernel.enabled) {
    sinks.push(
      new KernelSink({
        device: config.kernel.device,
        creditBitsPerByte: cappedCredit(config.kernel.creditBitsPerByte, assessed),
        bytes: config.kernel.bytes,
        intervalMs: config.kernel.intervalMs,
      }),
    );
  }
  for (const [i, p] of config.pkcs11.entries()) {
    const pin = p.pinFile ? await readSecret(p.pinFile, `feeder.pkcs11.${i}.pinFile`, 'PIN file') : undefined;
    sinks.push(
      new Pkcs11FeedSink(
        { module: p.module, tokenLabel: p.tokenLabel, ...(pin ? { pin } : {}), bytes: p.bytes, intervalMs: p.intervalMs, mixOsRandom: p.mixOsRandom },
        (message, fields) => options.logger.warn(fields, message),
      ),
    );
  }
  for (const f of config.files) sinks.push(new FileSink({ path: f.path, bytes: f.bytes, intervalMs: f.intervalMs }));
  return new Feeder({
    sources,
    sinks,
    buffer: options.buffer,
    logger: options.logger,
    ...(options.reopenAfterMs !== undefined ? { reopenAfterMs: options.reopenAfterMs } : {}),
    ...(options.processMetrics !== undefined ? { processMetrics: options.processMetrics } : {}),
    ...(options.ledger ? { ledger: options.ledger } : {}),
    ...(config.combine === 'all' ? { combine: { onDropOut: config.onDropOut } } : {}),
  });
}
