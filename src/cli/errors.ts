/**
 * An error meant for the person at the terminal: the CLI prints its message on one line
 * (no stack trace) and exits with `exitCode`.
 */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}
