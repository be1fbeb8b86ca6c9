// Watching the group each connection negotiates, on both ends: servers through their
// 'secureConnection' event, clients through checkClientSocket once the handshake is done
// (called by the https.Agent of src/client and by the undici connector of the KME links).
// Each handshake is counted (face, group) and logged at debug level; where a face requires
// post-quantum key exchange, a connection that did not negotiate a hybrid group is closed
// before any HTTP byte is read or written, logged and counted as refused.
import type { Server as TlsServer, TLSSocket } from 'node:tls';

import { handshakes, refusals } from './metrics.js';
import { negotiatedGroup } from './negotiated.js';
import { isHybridGroup } from './runtime.js';

export interface TlsLog {
  debug(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

/** What a server decides about one connection once its handshake is done. */
export interface ConnectionVerdict {
  /** Metric label (e.g. 'kme-sae' or 'kme-link-server'). */
  face: string;
  /** Close the connection unless the group is hybrid. */
  requireHybrid: boolean;
  /** Extra fields for the log line (peer IDs; never key material). */
  who?: Record<string, unknown>;
}

export interface ServerWatch {
  log: TlsLog;
  /** Decides face and requirement per connection; default: `face`, not required. */
  classify?: (socket: TLSSocket) => ConnectionVerdict;
  face: string;
  /** Called with each accepted connection's group (e.g. to show a peer link's group). */
  onGroup?: (socket: TLSSocket, group: string | undefined, verdict: ConnectionVerdict) => void;
}

/** Counts, logs and (where required) refuses each TLS connection of `server`. */
export function watchServer(server: unknown, watch: ServerWatch): void {
  const tls = server as TlsServer;
  tls.on('secureConnection', (socket: TLSSocket) => {
    const verdict = watch.classify?.(socket) ?? { face: watch.face, requireHybrid: false };
    const group = negotiatedGroup(socket) ?? 'unknown';
    handshakes.inc({ face: verdict.face, group });
    const fields = { face: verdict.face, group, remote: socket.remoteAddress, ...verdict.who };
    if (verdict.requireHybrid && !isHybridGroup(group)) {
      refusals.inc({ face: verdict.face });
      watch.log.warn(fields, 'tls: connection refused: it did not negotiate a post-quantum hybrid group (requirePostQuantum)');
      socket.destroy();
      return;
    }
    watch.log.debug(fields, 'tls: handshake');
    watch.onGroup?.(socket, group, verdict);
  });
}

export interface ClientWatch {
  face: string;
  /** The groups the client offers (its ecdhCurve), to name a group the runtime cannot (negotiated.ts). */
  offeredGroups?: string;
  log: TlsLog;
  requireHybrid?: boolean;
  /** Extra fields for the log line (e.g. the peer's ID). */
  who?: Record<string, unknown>;
  onGroup?: (group: string) => void;
}

export class NotPostQuantumError extends Error {
  readonly code = 'QENTROPY_TLS_NOT_POST_QUANTUM';
  constructor(group: string) {
    super(`the server negotiated ${group}, not a post-quantum hybrid group (requirePostQuantum)`);
    this.name = 'NotPostQuantumError';
  }
}

/**
 * Counts and logs a client connection's negotiated group once its handshake is done;
 * where post-quantum is required and the group is classical, logs and counts the
 * refusal and returns the error to fail the connection with (the caller destroys it).
 */
export function checkClientSocket(socket: TLSSocket, server: string | undefined, watch: ClientWatch): NotPostQuantumError | undefined {
  const group = negotiatedGroup(socket, watch.offeredGroups) ?? 'unknown';
  handshakes.inc({ face: watch.face, group });
  const fields = { face: watch.face, group, server, ...watch.who };
  if (watch.requireHybrid && !isHybridGroup(group)) {
    refusals.inc({ face: watch.face });
    watch.log.warn(fields, 'tls: connection refused: it did not negotiate a post-quantum hybrid group (requirePostQuantum)');
    return new NotPostQuantumError(group);
  }
  watch.log.debug(fields, 'tls: handshake');
  watch.onGroup?.(group);
  return undefined;
}

// The alerts a server sends when it shares none of the groups offered: a client that
// requires post-quantum offers only hybrid groups, so against a classical-only server its
// handshake ends in one of these, before any socket reaches checkClientSocket. OpenSSL 3.0
// names the first ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE, 3.5 ERR_SSL_SSL/TLS_ALERT_HANDSHAKE_FAILURE.
const NO_SHARED_GROUP_ALERT = /^ERR_SSL_.*_ALERT_(HANDSHAKE_FAILURE|INSUFFICIENT_SECURITY)$/;

/**
 * Logs and counts a client handshake that a server refused because it offers no hybrid
 * group, where post-quantum is required: the same refusal as checkClientSocket's, seen
 * from the failed handshake. Other failures are the caller's to report.
 */
export function reportClientHandshakeFailure(err: Error & { code?: string }, server: string | undefined, watch: ClientWatch): void {
  if (!watch.requireHybrid || err.code === undefined || !NO_SHARED_GROUP_ALERT.test(err.code)) return;
  refusals.inc({ face: watch.face });
  watch.log.warn(
    { face: watch.face, server, code: err.code, ...watch.who },
    'tls: handshake refused: the server shares no post-quantum hybrid group with us (requirePostQuantum)',
  );
}
