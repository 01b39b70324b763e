// kimi web: the page. Reads the session's events (the simple event stream plus the page's own
// notifications, one JSON-RPC 2.0 notification per SSE message) and sends controls over POST.
"use strict";

const TOKEN = document.querySelector('meta[name="kimi-token"]').content;
const $ = (id) => document.getElementById(id);
const state = { session: null, source: null, busy: false, run: null, tools: {}, requests: {}, replaying: false, follow: true, autoTop: 0 };

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

async function api(path, body) {
  const init = { headers: { "X-Kimi-Token": TOKEN } };
  if (body !== undefined) {
    init.method = "POST";
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

function showError(message) {
  const box = el("div", "error", message);
  box.dataset.testid = "error";
  $("transcript").append(box);
  scrollDown();
}

// The transcript follows new output while it is scrolled to the bottom; scrolled up, it stays put.
function scrollDown(force) {
  const t = $("transcript");
  if (force) state.follow = true;
  if (state.follow) { t.scrollTop = t.scrollHeight; state.autoTop = t.scrollTop; }
}

function onScroll() {
  const t = $("transcript");
  // Our own scrolling (even if the page grew since) keeps following; the reader's scrolling up stops it.
  state.follow = t.scrollHeight - t.scrollTop - t.clientHeight < 40 || t.scrollTop >= state.autoTop;
}

// ------------------------------------------------------------------ sessions

async function loadSessions() {
  const data = await api("/api/sessions");
  $("work-dir").textContent = data.work_dir;
  const select = $("model");
  if (!select.options.length) {
    for (const alias of data.models) select.append(new Option(alias, alias));
  }
  const list = $("sessions");
  list.replaceChildren();
  for (const s of data.sessions) {
    const item = el("li", s.id === state.session ? "current" : "");
    const link = el("a", "", s.title || "Untitled");
    link.href = "#" + s.id;
    link.title = s.id;
    item.dataset.sessionId = s.id;
    item.append(link);
    if (s.busy) item.append(el("span", "dot", "●"));
    list.append(item);
  }
  return data;
}

async function newSession() {
  const data = await api("/api/sessions", {});
  history.pushState(null, "", "#" + data.id);
  openSession(data.id);
  loadSessions().catch(() => {});
}

function openSession(id) {
  if (state.source) state.source.close();
  state.session = id;
  $("state").textContent = "connecting";
  $("transcript").replaceChildren();
  state.run = null; state.tools = {}; state.requests = {};
  if (!id) return;
  const url = `/api/sessions/${encodeURIComponent(id)}/events?token=${encodeURIComponent(TOKEN)}`;
  const source = new EventSource(url);
  source.onmessage = (e) => onMessage(JSON.parse(e.data));
  source.onerror = () => { if (source.readyState === EventSource.CLOSED) showError("The connection to kimi web was lost."); };
  state.source = source;
  for (const item of $("sessions").children) item.classList.toggle("current", item.dataset.sessionId === id);
}

// ------------------------------------------------------------------ the event stream

function currentRun() {
  if (!state.run) startRun("");
  return state.run;
}

function startRun(userInput) {
  if (!state.replaying) state.follow = true; // a new prompt: show it and its answer
  const t = $("transcript");
  const user = el("div", "msg user", userInput);
  user.dataset.testid = "user-message";
  const run = el("div", "run");
  t.append(user, run);
  state.run = { node: run, answer: null, thinking: null };
  return state.run;
}

function answerNode(run) {
  if (!run.answer) {
    run.answer = el("div", "msg assistant md");
    run.answer.dataset.testid = "answer";
    run.node.append(run.answer);
  }
  return run.answer;
}

function thinkingNode(run) {
  if (!run.thinking) {
    const details = el("details", "thinking");
    details.append(el("summary", "", "Thinking"), el("div", "text md"));
    run.node.append(details);
    run.thinking = details.lastChild;
  }
  return run.thinking;
}

function toolCard(id, name, args) {
  let card = state.tools[id];
  if (card) return card;
  card = el("div", "tool");
  card.dataset.testid = "tool-card";
  card.dataset.toolCallId = id;
  const head = el("div", "tool-head");
  head.append(el("span", "tool-name", name || "tool"), el("code", "tool-args", summarizeArgs(args)));
  card.append(head, el("div", "tool-display"), el("pre", "tool-output"));
  card.classList.add("running");
  currentRun().node.append(card);
  state.tools[id] = card;
  // A new step's text goes below its tools.
  currentRun().answer = null; currentRun().thinking = null;
  return card;
}

function summarizeArgs(args) {
  try {
    const parsed = JSON.parse(args || "{}");
    const first = parsed.command ?? parsed.path ?? parsed.pattern ?? parsed.url;
    if (typeof first === "string") return first;
  } catch (_) { /* not JSON: shown as is */ }
  return args || "";
}

function renderDisplay(container, blocks) {
  for (const block of blocks || []) {
    if (block.type === "diff") container.append(renderDiff(block));
    else if (block.type === "shell") container.append(el("pre", "shell-command", "$ " + block.command));
    else if (block.type === "brief") container.append(el("div", "brief", block.text));
    else if (block.type === "todo") {
      const list = el("ul", "todo");
      for (const item of block.items) list.append(el("li", item.status, item.title));
      container.append(list);
    }
  }
}

// The model's text as Markdown (markdown.js: DOM nodes, never its HTML). Chunks only append to
// the node's text; it is rendered once per frame, which also batches a replayed history.
const pending = new Set();

function appendText(node, text) {
  node.mdText = (node.mdText || "") + text;
  if (!pending.size) requestAnimationFrame(flushText);
  pending.add(node);
}

function flushText() {
  for (const node of pending) window.kimiMarkdown.renderInto(node, node.mdText);
  pending.clear();
  scrollDown();
}

function lines(text) {
  const out = text ? text.split("\n") : [];
  if (out.length && out[out.length - 1] === "") out.pop();
  return out;
}

function renderDiff(block) {
  const box = el("div", "diff");
  box.dataset.testid = "diff";
  box.append(el("div", "diff-path", block.path));
  const pre = el("pre");
  const old = lines(block.old_text);
  const neu = lines(block.new_text);
  for (const line of old) pre.append(el("span", "del", "- " + line + "\n"));
  for (const line of neu) pre.append(el("span", "add", "+ " + line + "\n"));
  box.append(pre);
  return box;
}

function approvalCard(req) {
  const card = el("div", "request approval");
  card.dataset.testid = "approval";
  card.append(el("div", "request-title", `${req.sender} wants to ${req.action}`), el("div", "request-body", req.description));
  if (req.warning) card.append(el("div", "request-warning", `Warning: ${req.warning}`));
  const display = el("div", "tool-display");
  renderDisplay(display, req.display);
  const feedback = el("input", "feedback");
  feedback.placeholder = "Feedback for the agent (with Reject)";
  const buttons = el("div", "buttons");
  const answer = (response) => () => {
    api(`/api/sessions/${state.session}/approval`, { request_id: req.id, response, feedback: feedback.value })
      .then(() => closeRequest(req.id, response)).catch((e) => showError(e.message));
  };
  const choices = [["Approve", "approve"]];
  // "for session" covers exactly what the server says (a command prefix, a directory, a host), and
  // is not offered when nothing may be remembered (credentials, protected paths).
  if (req.session_scope) choices.push([`Always allow ${req.session_scope} in this session`, "approve_for_session"]);
  choices.push(["Reject", "reject"]);
  for (const [label, response] of choices) {
    const b = el("button", response, label);
    b.type = "button";
    b.onclick = answer(response);
    buttons.append(b);
  }
  card.append(display, feedback, buttons);
  return card;
}

function questionCard(req) {
  const card = el("div", "request question");
  card.dataset.testid = "question";
  const inputs = [];
  req.questions.forEach((q, i) => {
    const box = el("fieldset");
    box.append(el("legend", "", q.header || "Question"), el("div", "request-title", q.question));
    if (q.body) box.append(el("pre", "question-body", q.body));
    for (const option of q.options) {
      const label = el("label");
      const input = el("input");
      input.type = q.multi_select ? "checkbox" : "radio";
      input.name = `q-${req.id}-${i}`;
      input.value = option.label;
      label.append(input, " " + option.label + (option.description ? " — " + option.description : ""));
      box.append(label);
    }
    const other = el("input", "other");
    other.placeholder = q.other_label || "Or answer in your own words";
    box.append(other);
    inputs.push({ q, box, other });
    card.append(box);
  });
  const submit = el("button", "", "Answer");
  submit.type = "button";
  submit.onclick = () => {
    const answers = {};
    for (const { q, box, other } of inputs) {
      const chosen = [...box.querySelectorAll("input:checked")].map((i) => i.value);
      if (other.value.trim()) chosen.push(other.value.trim());
      if (chosen.length) answers[q.question] = q.multi_select ? chosen : chosen[0];
    }
    api(`/api/sessions/${state.session}/question`, { request_id: req.id, answers })
      .then(() => closeRequest(req.id, "answered")).catch((e) => showError(e.message));
  };
  card.append(submit);
  return card;
}

function addRequest(req, card) {
  if (state.requests[req.id]) return;
  state.requests[req.id] = card;
  const tool = state.tools[req.tool_call_id];
  if (tool) tool.querySelector(".tool-head").after(card);
  else currentRun().node.append(card);
  scrollDown();
}

function closeRequest(id, response) {
  const card = state.requests[id];
  if (!card || card.classList.contains("done")) return;
  card.classList.add("done");
  for (const input of card.querySelectorAll("button, input")) input.disabled = true;
  const labels = { approve: "Approved", approve_for_session: "Approved for session", reject: "Rejected", answered: "Answered" };
  card.append(el("div", "resolution", labels[response] || "No longer waiting"));
}

function setStatus(s) {
  if (!s) return;
  state.busy = !!s.busy;
  $("session-title").textContent = s.title || "Untitled";
  $("plan-mode").checked = !!s.plan_mode;
  if (s.model) $("model").value = s.model;
  $("state").textContent = state.busy ? "working" : "idle";
  $("state").classList.toggle("busy", state.busy);
  $("steer").disabled = !state.busy;
  $("cancel").disabled = !state.busy;
  $("model").disabled = state.busy;
}

const handlers = {
  Reset(p) {
    $("transcript").replaceChildren(); pending.clear();
    state.run = null; state.tools = {}; state.requests = {}; state.replaying = true; state.follow = true;
    setStatus(p);
  },
  HistoryEnd(p) { state.replaying = false; setStatus(p); flushText(); scrollDown(true); },
  Status(p) { setStatus(p); loadSessions().catch(() => {}); },
  RunBegin(p) { startRun(p.user_input); scrollDown(); },
  TurnBegin() {},
  TextDelta(p) { appendText(answerNode(currentRun()), p.text); },
  ReasoningDelta(p) { appendText(thinkingNode(currentRun()), p.text); },
  ToolCallBegin(p) { toolCard(p.tool_call_id, p.name, p.arguments); scrollDown(); },
  StepEnd() {},
  ToolResult(p) {
    const card = toolCard(p.tool_call_id, p.name, "");
    card.classList.remove("running");
    card.querySelector(".tool-output").textContent = p.content;
    scrollDown();
  },
  ToolDisplay(p) {
    const card = toolCard(p.tool_call_id, "", "");
    card.classList.toggle("failed", p.is_error);
    renderDisplay(card.querySelector(".tool-display"), p.display);
    scrollDown();
  },
  TurnEnd() {},
  RunEnd() {
    for (const id of Object.keys(state.requests)) closeRequest(id, "closed");
    for (const card of Object.values(state.tools)) card.classList.remove("running");
    if (state.run) state.run.node.classList.add("ended");
    state.run = null;
  },
  ApprovalRequest(p) { addRequest(p, approvalCard(p)); },
  QuestionRequest(p) { addRequest(p, questionCard(p)); },
  RequestResolved(p) { closeRequest(p.id, p.response); },
  Steer(p) { const m = el("div", "msg user steer", p.text); currentRun().node.append(m); state.run.answer = null; },
  Notice(p) { currentRun().node.append(el("div", "notice", [p.title, p.body].filter(Boolean).join(": "))); },
  Error(p) { showError(p.message); },
};

function onMessage(message) {
  const handler = handlers[message.method];
  if (handler) handler(message.params || {});
}

// ------------------------------------------------------------------ controls

function control(action, body) {
  if (!state.session) return Promise.resolve();
  return api(`/api/sessions/${state.session}/${action}`, body || {}).catch((e) => showError(e.message));
}

async function submitPrompt(event) {
  event.preventDefault();
  const text = $("prompt").value;
  if (!text.trim()) return;
  if (!state.session) return;
  $("prompt").value = "";
  await control(state.busy ? "steer" : "prompt", { text });
}

window.addEventListener("DOMContentLoaded", async () => {
  $("composer").addEventListener("submit", submitPrompt);
  $("transcript").addEventListener("scroll", onScroll, { passive: true });
  $("prompt").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("composer").requestSubmit(); }
  });
  $("steer").onclick = () => { const text = $("prompt").value; if (text.trim()) { $("prompt").value = ""; control("steer", { text }); } };
  $("cancel").onclick = () => control("cancel");
  $("plan-mode").onchange = (e) => control("plan_mode", { enabled: e.target.checked });
  $("model").onchange = (e) => control("model", { alias: e.target.value });
  $("new-session").onclick = () => newSession().catch((e) => showError(e.message));
  window.addEventListener("hashchange", () => { if (location.hash.slice(1) !== state.session) openSession(location.hash.slice(1)); });
  try {
    const data = await loadSessions();
    const wanted = location.hash.slice(1);
    if (wanted) openSession(wanted);
    else if (data.sessions.length) { history.replaceState(null, "", "#" + data.sessions[0].id); openSession(data.sessions[0].id); }
    else await newSession();
  } catch (e) {
    showError(e.message);
  }
});
