// One account's allotment and its usage row for one period, read in one statement: what
// the reservation refusal, the serving process's grants and the usage report all start from.
import type { Queryable } from '../storage/db.js';

export interface AllotmentRow {
  /** null: unlimited. */
  allotmentBytes: number | null;
  /** 0 when the period has no usage row yet. */
  usedBytes: number;
  heldBytes: number;
}

const ALLOTMENT_ROW_SQL = `SELECT a.allotment_bytes, COALESCE(u.used_bytes, 0) AS used_bytes, COALESCE(u.held_bytes, 0) AS held_bytes
                             FROM accounts a LEFT JOIN allotment_usage u ON u.account_id = a.id AND u.period_start = $2
                            WHERE a.id = $1`;

/** undefined when the account does not exist. */
export async function readAllotmentRow(q: Queryable, accountId: number, periodStart: number): Promise<AllotmentRow | undefined> {
  const [row] = await q.query<{ allotment_bytes: number | null; used_bytes: number; held_bytes: number }>(ALLOTMENT_ROW_SQL, [
    accountId,
    periodStart,
  ]);
  return row && { allotmentBytes: row.allotment_bytes, usedBytes: row.used_bytes, heldBytes: row.held_bytes };
}
