// Plain http:// to an entropy API sends the bearer token (and, for a KME, its seeds) in
// clear to whoever is on the path. Loopback never leaves the host, so it is allowed; any
// other host needs an explicit `allowInsecureHttp: true` in the same block, which the role
// logs as a warning at every start (docs/security.md, "Secrets over plain HTTP").

/** True for names and addresses that never leave this host: localhost, 127.0.0.0/8, ::1. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  return bare === 'localhost' || bare.endsWith('.localhost') || bare === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

/** True when `url` is http:// to a host other than loopback (its secrets would cross a network in clear). */
export function isInsecureRemoteHttp(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false; // the caller's own URL check reports malformed URLs
  }
  return parsed.protocol === 'http:' && !isLoopbackHost(parsed.hostname);
}

/**
 * The problem with `url` for a block that sends secrets, or undefined when there is none.
 * `what` says what would go in clear, e.g. 'the access token'.
 */
export function insecureHttpProblem(url: string, allowInsecureHttp: boolean, what = 'the access token'): string | undefined {
  if (allowInsecureHttp || !isInsecureRemoteHttp(url)) return undefined;
  return `http:// to ${new URL(url).host} would send ${what} in clear: use https://, or set allowInsecureHttp: true in this block if the network path is trusted`;
}

/** The warning a role logs at start for each block that set allowInsecureHttp on a remote http:// URL. */
export function insecureHttpWarning(key: string, url: string): string {
  return `${key}: INSECURE: allowInsecureHttp is set and ${url} is plain HTTP to another host; the access token (and what it fetches) crosses the network in clear`;
}
