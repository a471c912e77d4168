import { z } from 'zod';
import { defineTool, type Tool } from './tool.js';

/** A web search through a SearxNG instance's JSON API (`/search?q=...&format=json`). */
export function createWebSearchTool(options: { searchUrl: string }): Tool {
  return defineTool({
    name: 'web_search',
    description:
      'Search the web and get the top results (title, URL, snippet). Fetch a result with http_fetch to read it.',
    schema: z.object({ query: z.string().trim().min(1).describe('What to search for') }),
    async run(args, context) {
      // Under the instance's own path: one served at https://host/searx/ searches at /searx/search.
      const url = new URL('search', options.searchUrl.endsWith('/') ? options.searchUrl : `${options.searchUrl}/`);
      url.searchParams.set('q', args.query);
      url.searchParams.set('format', 'json');
      let response: Response;
      try {
        response = await fetch(url, {
          signal: AbortSignal.any([context.signal, AbortSignal.timeout(context.timeoutMs)]),
        });
      } catch (error) {
        return { ok: false, output: `The search engine did not answer: ${(error as Error).message}` };
      }
      if (!response.ok) return { ok: false, output: `The search engine answered ${response.status}.` };
      const body = (await response.json()) as { results?: Array<{ title?: string; url?: string; content?: string }> };
      const results = (body.results ?? []).slice(0, 8);
      if (results.length === 0) return { ok: true, output: `No results for "${args.query}".` };
      return {
        ok: true,
        output: results
          .map(
            (result, index) =>
              `${index + 1}. ${result.title ?? '(no title)'}\n   ${result.url ?? ''}\n   ${result.content ?? ''}`,
          )
          .join('\n'),
      };
    },
  });
}
