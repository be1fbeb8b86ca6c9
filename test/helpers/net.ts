// Network helpers for tests whose daemons take a port number from a config file.
import net from 'node:net';

/** A port nobody listens on right now (the kernel's choice), for configs that need a number. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}
