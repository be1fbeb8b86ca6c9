// Which key-exchange group a TLS connection negotiated. A client socket reports it through
// getEphemeralKeyInfo() on Node 26 ('TLSGroup', the OpenSSL name), but a server socket
// reports nothing there, and Node 22 reports {} for hybrid groups. The serialized session
// (RFC-less but stable OpenSSL ASN.1, SSL_SESSION_ASN1) carries the group's IANA code
// point as field [19] kex_group on every OpenSSL 3 runtime, so that is read when
// getEphemeralKeyInfo is silent. A TLS 1.3 client has no session yet when its handshake
// completes (the tickets come after), so on Node 22 a client names its hybrid group from
// what it offered: the classical groups Node would have named itself.
import type { TLSSocket } from 'node:tls';

/** IANA TLS Supported Groups code points → OpenSSL names. */
const GROUP_NAMES: Record<number, string> = {
  0x0017: 'P-256',
  0x0018: 'P-384',
  0x0019: 'P-521',
  0x001d: 'X25519',
  0x001e: 'X448',
  0x0100: 'ffdhe2048',
  0x0101: 'ffdhe3072',
  0x0102: 'ffdhe4096',
  0x0200: 'MLKEM512',
  0x0201: 'MLKEM768',
  0x0202: 'MLKEM1024',
  0x11eb: 'SecP256r1MLKEM768',
  0x11ec: 'X25519MLKEM768',
  0x11ed: 'SecP384r1MLKEM1024',
};

/** getEphemeralKeyInfo's names for classical curves differ from the group names; unify. */
const CURVE_ALIASES: Record<string, string> = { prime256v1: 'P-256', secp384r1: 'P-384', secp521r1: 'P-521' };

export function groupName(codePoint: number): string {
  return GROUP_NAMES[codePoint] ?? `0x${codePoint.toString(16).padStart(4, '0')}`;
}

/** Reads one DER TLV at `at`; undefined when the buffer is malformed. */
function tlv(buf: Buffer, at: number): { tag: number; start: number; end: number } | undefined {
  if (at + 2 > buf.length) return undefined;
  const tag = buf[at]!;
  let len = buf[at + 1]!;
  let start = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 3 || start + n > buf.length) return undefined;
    len = 0;
    for (let i = 0; i < n; i++) len = (len << 8) | buf[start + i]!;
    start += n;
  }
  if (start + len > buf.length) return undefined;
  return { tag, start, end: start + len };
}

/** The kex_group field ([19] EXPLICIT INTEGER) of a DER SSL_SESSION, if present. */
export function kexGroupOfSession(session: Buffer): number | undefined {
  const outer = tlv(session, 0);
  if (!outer || outer.tag !== 0x30) return undefined;
  for (let at = outer.start; at < outer.end; ) {
    const field = tlv(session, at);
    if (!field) return undefined;
    if (field.tag === 0xb3) {
      const int = tlv(session, field.start);
      if (!int || int.tag !== 0x02 || int.end - int.start > 4) return undefined;
      let v = 0;
      for (let i = int.start; i < int.end; i++) v = v * 256 + session[i]!;
      return v;
    }
    at = field.end;
  }
  return undefined;
}

/** Groups getEphemeralKeyInfo names on every supported Node line (the classical curves). */
const NAMED_BY_NODE = /^(P-(256|384|521)|X25519|X448|prime256v1|secp(256k1|384r1|521r1))$/i;

/**
 * The negotiated group's name ("X25519MLKEM768", "X25519", "P-256", ...), or undefined.
 * `offered` (a client's colon-separated groups) decides where nothing else does: the group
 * is one the client offered, and a classical one would have been named, so an offer with
 * exactly one group that Node cannot name is that group.
 */
export function negotiatedGroup(socket: TLSSocket, offered?: string): string | undefined {
  const info = socket.getEphemeralKeyInfo() as { name?: string } | null;
  if (info?.name) return CURVE_ALIASES[info.name] ?? info.name;
  const session = socket.getSession();
  const code = session ? kexGroupOfSession(session) : undefined;
  if (code !== undefined) return groupName(code);
  if (!info || offered === undefined) return undefined;
  const unnamed = offered.split(':').filter((group) => group !== '' && !NAMED_BY_NODE.test(group));
  return unnamed.length === 1 ? unnamed[0] : undefined;
}
