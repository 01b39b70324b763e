// Drives `kimi acp` with the official TypeScript ACP SDK, as a Node-based editor would.
// Usage: node client.mjs <python> <work dir>; prints one JSON object with what it saw.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/unstable";

const [python, workDir] = process.argv.slice(2);
const child = spawn(python, ["-m", "kimi_acp", "acp"], { stdio: ["pipe", "pipe", "inherit"], env: process.env });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const permissions = [];
// The first permission request holds its answer until the main flow has steered the running turn.
let permissionAsked;
const asked = new Promise((resolve) => (permissionAsked = resolve));
let releasePermission;
const released = new Promise((resolve) => (releasePermission = resolve));
const app = acp
  .client({ name: "kimi-acp-node-test" })
  .onRequest(acp.methods.client.session.requestPermission, async (ctx) => {
    permissions.push({ title: ctx.params.toolCall.title, options: ctx.params.options.map((o) => o.optionId) });
    permissionAsked();
    await released;
    return { outcome: { outcome: "selected", optionId: "approve" } };
  });

const result = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {
      fs: { readTextFile: false, writeTextFile: false },
      terminal: false,
      session: { configOptions: { boolean: {} } },
    },
  });
  const session = await ctx.buildSession(workDir).start();
  const thinkingOption = session.newSessionResponse.configOptions?.find((o) => o.category === "thought_level");
  const thinkingSet = await ctx.request(acp.methods.agent.session.setConfigOption, {
    sessionId: session.sessionId,
    configId: thinkingOption?.id,
    type: "boolean",
    value: true,
  });
  // While the Shell call waits for its permission, the user's next message steers the turn.
  const steered = asked.then(async () => {
    const answer = await ctx.request("_session/steering", {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: "steer from node" }],
    });
    releasePermission();
    return answer;
  });
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
    steeringSupported: init._meta?.steering?.supported,
    steering: await steered,
    userChunks: updates.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content.text),
    thinkingOption: { id: thinkingOption?.id, type: thinkingOption?.type, currentValue: thinkingOption?.currentValue },
    thinkingAfterSet: thinkingSet.configOptions.find((o) => o.category === "thought_level")?.currentValue,
  };
});
child.stdin.end();
console.log(JSON.stringify(result));
