// The ceiling for benchmarks/kme/run.js: a bare Node https server with the same mTLS setup as
// a KME site (same certificates, client certificate required, TLS 1.3, same groups), in its
// own process, that reads and parses each POST's JSON body and answers a precomputed
// enc_keys-shaped body of the length a real answer has for that `number`. No framework, no
// storage, no peer: what the HTTPS request/response alone costs on this machine.
//   node bare.js '{"cert":…,"key":…,"ca":…,"groups"?:…}'   prints "listening PORT"; stops on SIGTERM.
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';

const args = JSON.parse(process.argv[2]);

/** An answer as the KME gives it: `number` 256-bit keys, base64, each with a UUID key ID. */
function answerFor(number) {
  const keys = Array.from({ length: number }, () => ({ key_ID: randomUUID(), key: randomBytes(32).toString('base64') }));
  return Buffer.from(JSON.stringify({ keys }));
}
const answers = new Map();

const server = https.createServer(
  {
    cert: fs.readFileSync(args.cert),
    key: fs.readFileSync(args.key),
    ca: fs.readFileSync(args.ca),
    requestCert: true,
    rejectUnauthorized: true,
    minVersion: 'TLSv1.3',
    ...(args.groups ? { ecdhCurve: args.groups } : {}),
  },
  (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      let number = 1;
      try {
        number = Math.max(1, Math.min(1024, Number(JSON.parse(Buffer.concat(chunks).toString() || '{}').number) || 1));
      } catch {
        // a malformed body gets the one-key answer: this server only measures
      }
      let body = answers.get(number);
      if (!body) answers.set(number, (body = answerFor(number)));
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
      res.end(body);
    });
  },
);
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${server.address().port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
