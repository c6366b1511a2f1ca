// The Anthropic Node SDK's tool runner as a looping agent: one tool that always answers the same,
// run against the base URL given on the command line, printing as JSON how the loop ended.
//
//   node tool_runner.mjs BASE_URL [--stream] [--no-thread]
//
// The SDK is resolved with require() so that NODE_PATH (e.g. `npm root -g`) finds a global
// install: ESM `import` ignores NODE_PATH, and the repository holds no node_modules.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Anthropic } = require('@anthropic-ai/sdk');
const { betaTool } = require('@anthropic-ai/sdk/helpers/beta/json-schema');
const { VERSION: version } = require('@anthropic-ai/sdk/version');

const [baseURL, ...flags] = process.argv.slice(2);
const stream = flags.includes('--stream');
const threaded = !flags.includes('--no-thread');

let executions = 0;
const readFile = betaTool({
  name: 'read_file',
  description: 'Read a file of the repository.',
  inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  run: ({ path }) => {
    executions += 1;
    return `contents of ${path}: nothing new`;
  },
});

// The status of every answer the SDK got: it replays a turn under a new thread by itself when
// told `thread_not_found` or `thread_already_continued`, so only this shows a refused turn.
// And the body of every request it sent, to compare with what reached the upstream.
const statuses = [];
const bodies = [];
const fetchSeen = async (url, init) => {
  bodies.push(typeof init?.body === 'string' ? init.body : null);
  const response = await fetch(url, init);
  statuses.push(response.status);
  return response;
};
const client = new Anthropic({
  baseURL,
  apiKey: 'sk-ant-client',
  maxRetries: 0,
  timeout: 20_000,
  fetch: fetchSeen,
});
const runner = client.beta.messages.toolRunner({
  model: 'claude-test',
  max_tokens: 512,
  max_iterations: 15,
  system: 'You fix bugs.',
  tools: [readFile],
  messages: [{ role: 'user', content: 'summarize a.txt' }],
  stream,
  ...(threaded ? {} : { thread: false }),
});

const messages = [];
for await (const item of runner) {
  messages.push(stream ? await item.finalMessage() : item);
}
const last = messages.at(-1);
const text = (message) => message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
console.log(
  JSON.stringify({
    sdk_version: version,
    stream,
    threaded,
    messages: messages.length,
    executions,
    statuses,
    bodies,
    stop_reason: last?.stop_reason ?? null,
    final_text: last ? text(last) : null,
  }),
);
