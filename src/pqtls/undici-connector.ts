// The undici side of watching client handshakes (the KME's inter-KME links use undici).
// Kept apart from observe.ts so that clients on node:https (src/client: the feeder, the
// entropy upstream) never load undici (docs/feeder.md, "Memory").
import type { TLSSocket } from 'node:tls';

import { buildConnector } from 'undici';

import { checkClientSocket, reportClientHandshakeFailure, type ClientWatch } from './observe.js';

/**
 * An undici `connect` function: undici's own connector with `tlsOptions`, plus the count,
 * the debug line and (when required) the refusal of a classical handshake.
 */
export function watchedConnector(tlsOptions: buildConnector.BuildOptions, watch: ClientWatch): buildConnector.connector {
  const connect = buildConnector(tlsOptions);
  const offered = { ...watch, offeredGroups: watch.offeredGroups ?? (tlsOptions as { ecdhCurve?: string }).ecdhCurve };
  return (options, callback) => {
    connect(options, (err, socket) => {
      if (err || !socket) {
        if (err) reportClientHandshakeFailure(err, options.hostname, watch);
        callback(err ?? new Error('connect failed'), null);
        return;
      }
      const tlsSocket = socket as TLSSocket;
      if (typeof tlsSocket.getEphemeralKeyInfo !== 'function') {
        callback(null, socket);
        return;
      }
      const refused = checkClientSocket(tlsSocket, options.hostname, offered);
      if (refused) {
        socket.destroy();
        callback(refused, null);
        return;
      }
      callback(null, socket);
    });
  };
}
