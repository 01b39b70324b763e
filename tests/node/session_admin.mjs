// Drives `kimi acp` with the official TypeScript ACP SDK (its unstable entry point) through what a
// history panel and a usage meter do: per-prompt usage, the session's cost, session/set_title,
// session/status, session/archive / unarchive and session/list's archive filter.
// Usage: node session_admin.mjs <python> <work dir>; prints one JSON object with what it saw,
// including every line the agent wrote (the test validates each against the schema).
import * as acp from "@agentclientprotocol/sdk/unstable";
import { spawnAgent } from "./agent_process.mjs";

const [python, workDir] = process.argv.slice(2);
const { child, stream, agentLines, sent } = spawnAgent(python);

const app = acp.client({ name: "kimi-acp-node-admin" });
const result = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  });
  const session = await ctx.buildSession(workDir).start();
  const usages = [];
  const costs = [];
  for (const text of ["hello", "again"]) {
    const done = session.prompt(text);
    for (;;) {
      const message = await session.nextUpdate();
      if (message.kind === "stop") break;
      const update = message.notification.update;
      if (update.sessionUpdate === "usage_update") costs.push(update.cost ?? null);
    }
    usages.push((await done).usage);
  }
  const id = session.sessionId;
  const titled = await ctx.request(acp.methods.agent.session.setTitle, { sessionId: id, title: "  Node   title " });
  const statusOpen = await ctx.request(acp.methods.agent.session.status, { sessionId: id });
  let unknown = null;
  try {
    await ctx.request(acp.methods.agent.session.status, { sessionId: "no-such-session" });
  } catch (error) {
    unknown = { code: error.code, data: error.data };
  }
  await ctx.request(acp.methods.agent.session.archive, { sessionId: id });
  const statusArchived = await ctx.request(acp.methods.agent.session.status, { sessionId: id });
  const listedDefault = await ctx.request(acp.methods.agent.session.list, { cwd: workDir });
  const listedOnly = await ctx.request(acp.methods.agent.session.list, { cwd: workDir, archived: "only" });
  await ctx.request(acp.methods.agent.session.unarchive, { sessionId: id });
  const listedAfter = await ctx.request(acp.methods.agent.session.list, { cwd: workDir });
  session.dispose();
  return {
    capabilities: init.agentCapabilities?.sessionCapabilities,
    usages,
    costs,
    titled,
    statusOpen,
    unknown,
    statusArchived,
    listedDefault: listedDefault.sessions.map((s) => s.sessionId),
    listedOnly: listedOnly.sessions.map((s) => ({ id: s.sessionId, title: s.title, archived: s.archived })),
    listedAfter: listedAfter.sessions.map((s) => ({ id: s.sessionId, archived: s.archived })),
    sessionId: id,
  };
});
child.stdin.end();
console.log(JSON.stringify({ ...result, agentLines, sent }));
