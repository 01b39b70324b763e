// Drives `kimi acp` with the official TypeScript ACP SDK (its unstable entry point) as an editor that
// renders plans natively would: it advertises `clientCapabilities.plan` and reads files
// (`fs.readTextFile`), so it gets the todo list and plan mode's plan as `plan_update` / `plan_removed`.
// Usage: node plans.mjs <python> <work dir> <session id> <prompt>...: loads the session, sends each
// prompt (none: only the load's replay), approves every plan question with its first allow_* option;
// prints one JSON object with the updates the SDK parsed, every line the agent wrote and every line
// sent (the test validates each agent line against the schema).
import { readFile, writeFile } from "node:fs/promises";
import * as acp from "@agentclientprotocol/sdk/unstable";
import { spawnAgent } from "./agent_process.mjs";

const [python, workDir, sessionId, ...prompts] = process.argv.slice(2);
const { child, stream, agentLines, sent } = spawnAgent(python);

const updates = [];
const asked = [];
const app = acp
  .client({ name: "kimi-acp-node-plans" })
  .onNotification(acp.methods.client.session.update, async (ctx) => {
    updates.push(ctx.params.update);
  })
  .onRequest(acp.methods.client.session.requestPermission, async (ctx) => {
    const option = ctx.params.options.find((o) => o.kind === "allow_once");
    asked.push(option.name);
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onRequest(acp.methods.client.fs.readTextFile, async (ctx) => ({ content: await readFile(ctx.params.path, "utf8") }))
  .onRequest(acp.methods.client.fs.writeTextFile, async (ctx) => {
    await writeFile(ctx.params.path, ctx.params.content);
    return {};
  });

const result = await app.connectWith(stream, async (ctx) => {
  await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false, plan: {} },
  });
  await ctx.request(acp.methods.agent.session.load, { sessionId, cwd: workDir, mcpServers: [] });
  const loaded = updates.length;
  const stopReasons = [];
  for (const text of prompts) {
    const response = await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
    stopReasons.push(response.stopReason);
  }
  return { loaded, stopReasons };
});
child.stdin.end();
console.log(JSON.stringify({ ...result, updates, asked, agentLines, sent }));
