// Strict reading of the quality APIs' query parameters (spec part B, product.md §5.3):
// integers as plain decimal digits in range, booleans exactly `true` or `false`, each
// parameter at most once, nothing unknown. Every problem is reported, not just the first.

export const NUM_MIN = 1;
export const NUM_MAX = 100;
export const NUM_DEFAULT = 5;
export const RANDSIZE_MIN = 1;
export const RANDSIZE_MAX = 5_242_880;
export const RANDSIZE_DEFAULT = 1_024;

export interface QueryProblem {
  parameter: string;
  problem: string;
  value?: string;
}

/** A 400 for the client: `{"message", "details"}`, naming where the bad parameter was. */
export class QueryError extends Error {
  constructor(
    readonly details: QueryProblem[],
    where: 'query' | 'path' = 'query',
  ) {
    super(details.length === 1 ? `invalid ${where} parameter ${details[0]!.parameter}: ${details[0]!.problem}` : `invalid ${where} parameters`);
    this.name = 'QueryError';
  }
}

/** A run id in a path (`/api/v1/runs/{id}`, `/page/v1/runs/{id}`): a positive integer. */
export function parseRunId(text: string): number {
  if (!/^[0-9]{1,15}$/.test(text) || Number(text) < 1) {
    throw new QueryError([{ parameter: 'id', problem: 'must be a positive integer run id', value: text.slice(0, 32) }], 'path');
  }
  return Number(text);
}

type Spec = { kind: 'int'; min: number; max: number; fallback: number } | { kind: 'bool'; fallback: boolean };

const NUM: Spec = { kind: 'int', min: NUM_MIN, max: NUM_MAX, fallback: NUM_DEFAULT };
const RANDSIZE: Spec = { kind: 'int', min: RANDSIZE_MIN, max: RANDSIZE_MAX, fallback: RANDSIZE_DEFAULT };
const bool = (fallback: boolean): Spec => ({ kind: 'bool', fallback });

export const ENDPOINT_PARAMS = {
  logs: { num: NUM, simple: bool(false) },
  failing_logs: { num: NUM, simple: bool(false), strict: bool(true), include_random: bool(false), randsize: RANDSIZE },
  failing_random: { num: NUM, randsize: RANDSIZE },
  runs: { num: NUM },
} as const satisfies Record<string, Record<string, Spec>>;

type Parsed<S extends Record<string, Spec>> = { [K in keyof S]: S[K] extends { kind: 'int' } ? number : boolean };

const show = (text: string): string => (text.length > 32 ? `${text.slice(0, 32)}...` : text);

/** Parses `query` (as Fastify gives it: repeated keys become arrays) against an endpoint's parameters. */
export function parseQuery<S extends Record<string, Spec>>(query: unknown, specs: S): Parsed<S> {
  const params = (query ?? {}) as Record<string, unknown>;
  const problems: QueryProblem[] = [];
  const out: Record<string, number | boolean> = {};
  for (const key of Object.keys(params)) {
    if (key in specs) continue;
    const accepted = Object.keys(specs);
    problems.push({
      parameter: show(key),
      problem: accepted.length > 0 ? `unknown parameter (accepted: ${accepted.join(', ')})` : 'unknown parameter (this path takes none)',
    });
  }
  for (const [name, spec] of Object.entries(specs)) {
    out[name] = spec.fallback;
    const raw = params[name];
    if (raw === undefined) continue;
    if (Array.isArray(raw)) {
      problems.push({ parameter: name, problem: 'given more than once' });
      continue;
    }
    const text = String(raw);
    if (spec.kind === 'bool') {
      if (text === 'true' || text === 'false') out[name] = text === 'true';
      else problems.push({ parameter: name, problem: 'must be true or false', value: show(text) });
      continue;
    }
    const range = `an integer from ${spec.min} to ${spec.max}`;
    if (!/^[0-9]{1,16}$/.test(text)) {
      problems.push({ parameter: name, problem: `must be ${range}`, value: show(text) });
      continue;
    }
    const value = Number(text);
    if (value < spec.min || value > spec.max) {
      problems.push({ parameter: name, problem: `out of range: must be ${range}`, value: show(text) });
      continue;
    }
    out[name] = value;
  }
  if (problems.length > 0) throw new QueryError(problems);
  return out as Parsed<S>;
}
