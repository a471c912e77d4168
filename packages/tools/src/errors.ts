/** The tools package's error family: a refusal the model can act on, as plain data. */

export type ToolErrorCode =
  'path_outside_workdir' | 'not_found' | 'invalid_arguments' | 'edit_mismatch' | 'tool_unavailable' | 'file_too_large';

export class ToolError extends Error {
  override readonly name = 'ToolError';
  constructor(
    readonly code: ToolErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
