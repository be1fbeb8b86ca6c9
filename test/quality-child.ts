// A quality role in a process of its own, for test/quality-restart.test.ts: the OS generator
// through a pool of its own, plain HTTP on 127.0.0.1, storage from QENTROPY_STORAGE_URL.
// Prints one JSON line per event on stdout: {"event":"listening","url"}, {"event":"drawn"}
// (the bits are drawn and the battery starts), and the role's own log lines.
import pino from 'pino';

import { OwnPoolSource, type QualityBitSource } from '../src/quality/sources.js';
import { QualityRole } from '../src/roles/quality.js';
import { GetrandomSource } from '../src/sources/index.js';

const say = (event: object): void => void process.stdout.write(`${JSON.stringify(event)}\n`);

const inner = new OwnPoolSource(new GetrandomSource());
const source: QualityBitSource = {
  name: inner.name,
  async draw(bytes, signal) {
    const data = await inner.draw(bytes, signal);
    say({ event: 'drawn', bytes });
    return data;
  },
  close: () => inner.close(),
};

const role = new QualityRole(
  {
    enabled: true,
    listen: { host: '127.0.0.1', port: 0 },
    plainHttp: true,
    intervalSeconds: Number(process.env.QUALITY_INTERVAL_SECONDS ?? 600),
    firstRunDelaySeconds: 0,
    streams: Number(process.env.QUALITY_STREAMS ?? 60),
    bitsPerStream: Number(process.env.QUALITY_BITS ?? 1_000_000),
    threads: 1,
    source: 'pool',
    drawTimeoutSeconds: 60,
    retentionDays: 90,
    passingDataRetentionDays: 0,
    pruneIntervalSeconds: 3600,
    logRequests: false,
    storageUrl: process.env.QENTROPY_STORAGE_URL!,
  },
  { logger: pino({ level: 'info' }), stateDir: '/tmp' },
  { source },
);
await role.start();
say({ event: 'listening', url: role.address!.url });
process.on('SIGTERM', () => {
  void role.stop().then(() => process.exit(0));
});
