import { z } from 'zod';
import { defineTool } from './tool.js';

export const ASK_USER_TOOL = 'ask_user';

/**
 * Asks the user a question and waits for the answer. The agent loop handles this tool itself: the task
 * goes to `waiting` with the question, and resumes when the answer arrives. `run` is never called.
 */
export const askUserTool = defineTool({
  name: ASK_USER_TOOL,
  description:
    'Ask the user a question when the task cannot be done without their answer. The task pauses until they answer.',
  schema: z.object({ question: z.string().min(1).describe('One clear question') }),
  fence: { tags: ['ask_user'], toArguments: (block) => ({ question: block.code.trim() }) },
  async run() {
    throw new Error('ask_user is handled by the agent loop');
  },
});
