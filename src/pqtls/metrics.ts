// The TLS key-exchange counters, one set per process: every face of the daemon (entropy,
// quality, KME, upstream clients) counts here, and each /metrics endpoint includes them.
import { Counter, Registry } from '../metrics/prom.js';

export const tlsRegistry = new Registry();

export const handshakes = new Counter({
  name: 'qentropy_tls_handshakes_total',
  help: 'TLS handshakes completed, by face and negotiated key-exchange group',
  labelNames: ['face', 'group'] as const,
  registers: [tlsRegistry],
});

export const refusals = new Counter({
  name: 'qentropy_tls_refused_total',
  help: 'TLS connections refused because they did not negotiate a post-quantum hybrid group, by face',
  labelNames: ['face'] as const,
  registers: [tlsRegistry],
});

/** `registry` plus the TLS counters, for a /metrics handler. */
export function withTlsMetrics(registry: Registry): Registry {
  return Registry.merge([registry, tlsRegistry]);
}
