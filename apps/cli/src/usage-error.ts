/** A mistake in how the command was called: printed without a stack trace, exit status 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
