// The origin's view of a peer's room for new keys. The peer holds the keys, so only it
// knows how full the link is there and how much of each master SAE's share is used; it
// says so in every delivery answer and in answer to /internal/v1/keys/room (which status
// calls). enc_keys does not depend on this view (the peer checks every delivery); status
// uses it so that stored_key_count is what the caller can really get.

/** A peer's room as it reports it: for the link, and per master SAE of this site. */
export interface RoomReport {
  link: number;
  saes: Record<string, number>;
}

/** One master SAE's share refused by the peer in a delivery (its keys were not stored). */
export interface DeliveryRefusal {
  master_SAE_ID: string;
  key_IDs: string[];
  stored_key_count: number;
  max_key_count_per_SAE: number;
}

/** What status reports: the peer's room on the link and in the caller's share, as of `at`. */
export interface Room {
  link: number;
  sae?: number;
  at: number;
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

export class PeerRooms {
  private readonly bySite = new Map<string, { link: number; at: number; saes: Map<string, number> }>();

  /** Takes the `room` member of a peer's answer, if it has a well-formed one (older peers send none). */
  record(site: string, reply: unknown, now = Date.now()): void {
    const room = (reply as { room?: Partial<RoomReport> } | null)?.room;
    if (!room || !isCount(room.link)) return;
    const entry = this.bySite.get(site) ?? { link: room.link, at: now, saes: new Map<string, number>() };
    entry.link = room.link;
    entry.at = now;
    for (const [sae, n] of Object.entries(room.saes ?? {})) if (isCount(n)) entry.saes.set(sae, n);
    this.bySite.set(site, entry);
  }

  get(site: string, sae: string): Room | undefined {
    const entry = this.bySite.get(site);
    if (!entry) return undefined;
    const share = entry.saes.get(sae);
    return { link: entry.link, at: entry.at, ...(share !== undefined ? { sae: share } : {}) };
  }
}
