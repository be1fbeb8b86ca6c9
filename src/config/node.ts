// A small validation toolkit for the config file: walks the parsed JSON with the key path
// in hand, so every problem is reported as `entropy.listen.port: expected an integer
// 0..65535, got "80a"`. Problems are collected (not thrown one by one), so a user fixes
// the whole file in one go; `loadConfig` throws them together as a ConfigError.

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(problems.length === 1 ? `config: ${problems[0]}` : `config: ${problems.length} problems: ${problems.join('; ')}`);
    this.name = 'ConfigError';
  }
}

/** Where a value came from, to name the environment variable in a message. */
export type OriginOf = (path: string) => string | undefined;

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

export class ConfigNode {
  constructor(
    /** The raw value at this path (undefined when the key is absent). */
    readonly value: unknown,
    readonly path: string,
    private readonly problems: string[],
    private readonly originOf: OriginOf = () => undefined,
  ) {}

  get present(): boolean {
    return this.value !== undefined;
  }

  /** Records a problem already phrased with its key path. */
  report(message: string): void {
    this.problems.push(message);
  }

  /** Records a problem at this path; validation continues. */
  fail(problem: string): void {
    const origin = this.originOf(this.path);
    this.problems.push(`${this.path}${origin ? ` (from ${origin})` : ''}: ${problem}`);
  }

  private expected(what: string): void {
    this.fail(`expected ${what}, got ${describe(this.value)}`);
  }

  /** The node for `key` of this object (absent when this is not an object). */
  child(key: string): ConfigNode {
    const obj = this.isObject() ? (this.value as Record<string, unknown>) : undefined;
    return new ConfigNode(obj?.[key], this.path ? `${this.path}.${key}` : key, this.problems, this.originOf);
  }

  private isObject(): boolean {
    return typeof this.value === 'object' && this.value !== null && !Array.isArray(this.value);
  }

  /**
   * Checks this is an object (absent counts as empty) holding only `allowed` keys; an
   * unknown key is reported (it is usually a typo that would silently do nothing).
   */
  object(allowed: readonly string[]): this {
    if (!this.present) return this;
    if (!this.isObject()) {
      this.expected('an object');
      return this;
    }
    for (const key of Object.keys(this.value as object)) {
      if (!allowed.includes(key)) this.child(key).fail(`unknown key (known here: ${allowed.join(', ')})`);
    }
    return this;
  }

  /** Keys actually present in this object. */
  keys(): string[] {
    return this.isObject() ? Object.keys(this.value as object) : [];
  }

  string(fallback: string, options: { nonEmpty?: boolean } = {}): string {
    if (!this.present) return fallback;
    if (typeof this.value !== 'string') {
      this.expected('a string');
      return fallback;
    }
    if ((options.nonEmpty ?? true) && this.value.trim() === '') {
      this.fail('must not be empty');
      return fallback;
    }
    return this.value;
  }

  optionalString(): string | undefined {
    if (!this.present) return undefined;
    const s = this.string('');
    return s === '' ? undefined : s;
  }

  /** A required string: absence is a problem too. */
  requiredString(): string {
    if (!this.present) {
      this.fail('is required');
      return '';
    }
    return this.string('');
  }

  boolean(fallback: boolean): boolean {
    if (!this.present) return fallback;
    if (typeof this.value !== 'boolean') {
      this.expected('true or false');
      return fallback;
    }
    return this.value;
  }

  integer(fallback: number, range: { min?: number; max?: number } = {}): number {
    const min = range.min ?? Number.MIN_SAFE_INTEGER;
    const max = range.max ?? Number.MAX_SAFE_INTEGER;
    if (!this.present) return fallback;
    if (typeof this.value !== 'number' || !Number.isSafeInteger(this.value) || this.value < min || this.value > max) {
      this.expected(`an integer ${rangeText(min, max)}`);
      return fallback;
    }
    return this.value;
  }

  number(fallback: number, range: { min?: number; max?: number; minExclusive?: boolean } = {}): number {
    const min = range.min ?? -Infinity;
    const max = range.max ?? Infinity;
    if (!this.present) return fallback;
    const v = this.value;
    if (typeof v !== 'number' || !Number.isFinite(v) || v > max || (range.minExclusive ? v <= min : v < min)) {
      this.expected(`a number ${range.minExclusive ? `> ${min}` : `>= ${min}`}${max !== Infinity ? ` and <= ${max}` : ''}`);
      return fallback;
    }
    return v;
  }

  oneOf<T extends string>(values: readonly T[], fallback: T): T {
    if (!this.present) return fallback;
    if (typeof this.value !== 'string' || !values.includes(this.value as T)) {
      this.expected(`one of ${values.join(', ')}`);
      return fallback;
    }
    return this.value as T;
  }
}

function rangeText(min: number, max: number): string {
  if (min === Number.MIN_SAFE_INTEGER && max === Number.MAX_SAFE_INTEGER) return '';
  if (max === Number.MAX_SAFE_INTEGER) return `>= ${min}`;
  if (min === Number.MIN_SAFE_INTEGER) return `<= ${max}`;
  return `${min}..${max}`;
}
