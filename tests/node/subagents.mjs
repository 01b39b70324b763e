// Drives `kimi acp` with the official TypeScript ACP SDK (its unstable entry point) through subagents
// as child sessions: `clientCapabilities.subagents` (unless "--without"), a prompt whose subagents
// work in child sessions, and a `session/cancel` of the child whose permission request is open;
// with "--load <id>", a `session/load` of that session instead.
// Usage: node subagents.mjs <python> <work dir> [--without] [--load <session id>]; prints one JSON
// object with what it saw, including every line the agent wrote (the test validates each).
import * as acp from "@agentclientprotocol/sdk/unstable";
import { spawnAgent } from "./agent_process.mjs";

const [python, workDir, ...flags] = process.argv.slice(2);
const subagents = !flags.includes("--without");
const loadId = flags.includes("--load") ? flags[flags.indexOf("--load") + 1] : null;
const { child, stream, agentLines, sent } = spawnAgent(python);

const updates = []; // [session id, update], in arrival order, as the SDK parsed them
const permissions = [];
let parentId = loadId;
const app = acp
  .client({ name: "kimi-acp-node-subagents" })
  .onNotification(acp.methods.client.session.update, async (ctx) => {
    updates.push([ctx.params.sessionId, ctx.params.update]);
  })
  .onRequest(acp.methods.client.session.requestPermission, async (ctx) => {
    const asked = { sessionId: ctx.params.sessionId, toolCallId: ctx.params.toolCall.toolCallId, withdrawn: false };
    permissions.push(asked);
    if (ctx.params.sessionId === parentId) return { outcome: { outcome: "selected", optionId: "approve" } };
    // A child asks: the user stops that child instead of answering; the agent withdraws the question.
    const withdrawn = new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
    await ctx.agent.notify(acp.methods.agent.session.cancel, { sessionId: ctx.params.sessionId });
    await withdrawn;
    asked.withdrawn = true;
    return { outcome: { outcome: "cancelled" } };
  });

const result = await app.connectWith(stream, async (ctx) => {
  await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, ...(subagents ? { subagents: {} } : {}) },
  });
  if (loadId) {
    await ctx.request(acp.methods.agent.session.load, { sessionId: loadId, cwd: workDir, mcpServers: [] });
    return { sessionId: loadId };
  }
  const session = await ctx.request(acp.methods.agent.session.new, { cwd: workDir, mcpServers: [] });
  parentId = session.sessionId;
  const response = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId: parentId,
    prompt: [{ type: "text", text: "look around twice" }],
  });
  return { sessionId: parentId, stopReason: response.stopReason };
});
child.stdin.end();
console.log(JSON.stringify({ ...result, updates, permissions, agentLines, sent }));
