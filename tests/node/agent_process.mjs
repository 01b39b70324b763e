// `kimi acp` as a child process, joined to an ACP SDK stream, with every line it wrote and every line
// sent to it kept (the tests validate each agent line against the schema).
import { spawn } from "node:child_process";
import { PassThrough, Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/unstable";

export function spawnAgent(python) {
  const child = spawn(python, ["-m", "kimi_acp", "acp"], { stdio: ["pipe", "pipe", "inherit"], env: process.env });
  const agentLines = [];
  const sent = [];
  let pending = "";
  const tap = new PassThrough();
  child.stdout.on("data", (data) => {
    pending += data.toString("utf8");
    const lines = pending.split("\n");
    pending = lines.pop();
    agentLines.push(...lines.filter((l) => l.trim()));
    tap.write(data);
  });
  child.stdout.on("end", () => tap.end());
  const toAgent = new PassThrough();
  toAgent.on("data", (data) => sent.push(...data.toString("utf8").split("\n").filter((l) => l.trim())));
  toAgent.pipe(child.stdin);
  const stream = acp.ndJsonStream(Writable.toWeb(toAgent), Readable.toWeb(tap));
  return { child, stream, agentLines, sent };
}
