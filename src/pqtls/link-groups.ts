// The group each peer link last negotiated, per direction (this site calling the peer, and
// the peer calling this site), for the KME status extension and /healthz.
export interface LinkGroupSeen {
  group: string;
  /** ms since the epoch of the handshake. */
  at: number;
}

export interface LinkGroupStatus {
  outbound?: LinkGroupSeen;
  inbound?: LinkGroupSeen;
}

export class LinkGroups {
  private readonly links = new Map<string, LinkGroupStatus>();

  record(peer: string, direction: 'outbound' | 'inbound', group: string): void {
    const link = this.links.get(peer) ?? {};
    link[direction] = { group, at: Date.now() };
    this.links.set(peer, link);
  }

  get(peer: string): LinkGroupStatus {
    return { ...this.links.get(peer) };
  }
}
