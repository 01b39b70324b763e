// Drives `kimi acp` with the official TypeScript ACP SDK, as a Node-based editor would.
// Usage: node client.mjs <python> <work dir>; prints one JSON object with what it saw.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/unstable";

const [python, workDir] = process.argv.slice(2);
const child = spawn(python, ["-m", "kimi_acp", "acp"], { stdio: ["pipe", "pipe", "inherit"], env: process.env });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const permissions = [];
const app = acp
  .client({ name: "kimi-acp-node-test" })
  .onRequest(acp.methods.client.session.requestPermission, async (ctx) => {
    permissions.push({ title: ctx.params.toolCall.title, options: ctx.params.options.map((o) => o.optionId) });
    return { outcome: { outcome: "selected", optionId: "approve" } };
  });

const result = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  });
  const session = await ctx.buildSession(workDir).start();
  const updates = [];
  const stopReasons = [];
  for (const text of ["hello from node", "now run something"]) {
    const done = session.prompt(text);
    for (;;) {
      const message = await session.nextUpdate();
      if (message.kind === "stop") {
        stopReasons.push(message.stopReason);
        break;
      }
      updates.push(message.update);
    }
    await done;
  }
  const listed = await ctx.request(acp.methods.agent.session.list, { cwd: workDir });
  const options = await ctx.request(acp.methods.agent.session.setConfigOption, {
    sessionId: session.sessionId,
    configId: "mode",
    value: "yolo",
  });
  session.dispose();
  return {
    protocolVersion: init.protocolVersion,
    agentName: init.agentInfo?.name,
    sessionId: session.sessionId,
    modes: session.modes?.availableModes?.map((m) => m.id),
    stopReasons,
    text: updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join(""),
    toolCalls: updates.filter((u) => u.sessionUpdate === "tool_call").map((u) => ({ title: u.title, kind: u.kind })),
    finalStatuses: updates.filter((u) => u.sessionUpdate === "tool_call_update" && u.status).map((u) => u.status),
    permissions,
    listed: listed.sessions.map((s) => s.sessionId),
    modeAfterSet: options.configOptions.find((o) => o.id === "mode")?.currentValue,
  };
});
child.stdin.end();
console.log(JSON.stringify(result));
