// kimi web: the page. Reads the session's events (the simple event stream plus the page's own
// notifications; a replayed history comes as JSON-RPC batches) and sends controls over POST.
// A replay is built off-screen (a DocumentFragment) and attached once, so a long session costs
// one layout, not one per event. What goes inside a tool's card is cards.js.
"use strict";

const TOKEN = document.querySelector('meta[name="kimi-token"]').content;
// The token came in the address (?token=…): keep it for a reload of this tab only (sessionStorage,
// which the server's answer to a bare `/` reads back) and take it out of the address bar and of
// this history entry, so no screenshot or history shows it.
try { sessionStorage.setItem("kimi-web-token", TOKEN); } catch (_) { /* storage off: no reload */ }
if (new URLSearchParams(location.search).has("token")) {
  const bare = new URL(location.href);
  bare.searchParams.delete("token");
  history.replaceState(history.state, "", bare.pathname + bare.search + bare.hash);
}
const $ = (id) => document.getElementById(id);
const Cards = window.kimiCards;
const { el, scroller } = Cards;
const state = {
  session: null, source: null, busy: false, run: null, tools: {}, requests: {}, runs: [], // runs: one per RunBegin, for Undo
  running: new Set(), open: new Set(), // cards still running, requests still open: RunEnd settles them
  replaying: false, buffer: null, follow: true, autoTop: 0,
};
window.kimiTimings = {}; // performance.now() marks: historyEnd, painted (read by the tests)

class HttpError extends Error {
  constructor(message, status) { super(message); this.status = status; }
}

async function api(path, body) {
  const init = { headers: { "X-Kimi-Token": TOKEN } };
  if (body !== undefined) {
    init.method = "POST";
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (e) {
    checkServer(); // not reachable: is it still running?
    throw e;
  }
  const data = await response.json().catch(() => ({}));
  if (response.status === 403) { checkServer(); }
  if (!response.ok) throw new HttpError(data.error || response.statusText, response.status);
  return data;
}

// Where new transcript nodes go: off-screen while a history is replayed.
function root() {
  return state.replaying ? state.buffer : $("transcript");
}

function showError(message) {
  const box = el("div", "error", message);
  box.dataset.testid = "error";
  if (!state.replaying) box.setAttribute("role", "alert");
  root().append(box);
  scrollDown();
}

// A restarted `kimi web` has a new token: this tab's is refused (403). Say so, and how to go on.
let checking = false;
async function checkServer() {
  if (checking) return;
  checking = true;
  let text;
  try {
    const response = await fetch("/api/sessions", { headers: { "X-Kimi-Token": TOKEN } });
    if (response.status === 403 || response.status === 401) {
      text = "kimi web was restarted, and this tab still has the old token (a new one is made at each start). " +
        "Open the URL it printed when it started: the line “kimi web: open http://…/?token=…” in its terminal.";
    }
  } catch (_) {
    text = "kimi web is not running at this address. Start it again (kimi web) and open the URL it prints.";
  }
  checking = false;
  if (!text) return;
  const banner = $("banner");
  banner.textContent = text;
  banner.hidden = false;
  $("state").textContent = "disconnected";
}

// The transcript follows new output while it is scrolled to the bottom; scrolled up, it stays put.
function scrollDown(force) {
  if (state.replaying) return;
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

// The open session is the URL's fragment, "#/<id>" (a route, not a place in the page; "#<id>" too).
function hashSession() {
  return decodeURIComponent(location.hash.replace(/^#\/?/, ""));
}

const sessionActions = {
  refresh: () => loadSessions().catch((e) => showError(e.message)),
  rename: (id, title) => api(`/api/sessions/${id}/rename`, { title }).then(() => loadSessions()).catch((e) => showError(e.message)),
  async remove(id) {
    try {
      await api(`/api/sessions/${id}/delete`, {});
    } catch (e) {
      showError(e.message);
      return;
    }
    const data = await loadSessions();
    if (id === state.session) {
      const next = data.sessions.find((s) => s.id !== id);
      if (next) { history.replaceState(null, "", "#/" + next.id); openSession(next.id); } else await newSession();
    }
  },
};

let listed = 0; // the latest list asked for: an older answer arriving late must not overwrite it

async function loadSessions() {
  const asked = ++listed;
  const data = await api("/api/sessions");
  if (asked !== listed) return data;
  $("work-dir").textContent = data.work_dir;
  const select = $("model");
  if (!select.options.length) {
    for (const alias of data.models) select.append(new Option(alias, alias));
  }
  window.kimiSessions.render(data.sessions, state.session, sessionActions);
  return data;
}

async function newSession() {
  const data = await api("/api/sessions", {});
  history.pushState(null, "", "#/" + data.id);
  openSession(data.id);
  loadSessions().catch(() => {});
  window.kimiSessions.setDrawer(false);
  $("prompt").focus();
}

function openSession(id) {
  if (state.source) state.source.close();
  state.session = id;
  $("state").textContent = "connecting";
  $("transcript").replaceChildren();
  state.run = null; state.tools = {}; state.requests = {}; state.runs = []; state.running.clear(); state.open.clear();
  if (!id) return;
  const url = `/api/sessions/${encodeURIComponent(id)}/events?token=${encodeURIComponent(TOKEN)}`;
  const source = new EventSource(url);
  source.onmessage = (e) => {
    $("banner").hidden = true; // connected (again)
    const data = JSON.parse(e.data);
    if (Array.isArray(data)) for (const message of data) onMessage(message); // a replay batch
    else onMessage(data);
  };
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) {
      showError("The connection to kimi web was lost.");
      checkServer();
    } else {
      $("state").textContent = "reconnecting";
      checkServer();
    }
  };
  state.source = source;
  for (const item of $("sessions").children) item.classList.toggle("current", item.dataset.sessionId === id);
}

// ------------------------------------------------------------------ the transcript

function currentRun() {
  if (!state.run) startRun("");
  return state.run;
}

function startRun(userInput, counted) {
  if (!state.replaying) state.follow = true; // a new prompt: show it and its answer
  const user = el("div", "msg user", userInput);
  user.dataset.testid = "user-message";
  const run = el("div", "run");
  const bar = el("div", "undo-bar"); // the run's Undo control (first in the run), when the server says it can be undone
  bar.dataset.testid = "undo-bar";
  run.append(bar);
  root().append(user, run);
  state.run = { node: run, answer: null, thinking: null };
  if (counted) state.runs.push({ user, bar, run });
  return state.run;
}

// ------------------------------------------------------------------ undo

// The server marks which runs can be undone ("/undo N" takes back that run and every later one)
// and which were; a run's control first shows what it would restore, then acts.
function markUndo(p) {
  const marks = new Map((p.runs || []).map((m) => [m.run, m]));
  const undone = new Set(p.undone || []);
  state.runs.forEach((entry, index) => {
    entry.user.classList.toggle("undone", undone.has(index));
    entry.run.classList.toggle("undone", undone.has(index));
    const mark = marks.get(index);
    const button = entry.bar.querySelector("button.undo");
    if (undone.has(index)) {
      entry.bar.replaceChildren(el("span", "muted", "Undone"));
    } else if (!mark) {
      if (button || entry.bar.textContent) entry.bar.replaceChildren();
    } else if (!button || button.dataset.turns !== String(mark.turns)) {
      const b = el("button", "undo", "Undo");
      b.type = "button";
      b.dataset.turns = String(mark.turns);
      b.dataset.seq = String(mark.seq);
      b.title = mark.turns === 1 ? "Take back this turn: its files and its part of the conversation"
        : `Take back this turn and the ${mark.turns - 1} after it: their files and their part of the conversation`;
      b.onclick = () => showUndo(entry, mark);
      entry.bar.replaceChildren(b);
    }
  });
}

function fileList(title, items, render) {
  if (!items.length) return null;
  const box = el("div", "undo-list");
  const list = el("ul");
  for (const item of items) list.append(el("li", "", render(item)));
  box.append(el("div", "undo-list-title", `${title} (${items.length})`), list);
  return box;
}

async function showUndo(entry, mark) {
  let preview;
  try {
    preview = await api(`/api/sessions/${state.session}/undo_preview`, { turns: mark.turns });
  } catch (e) {
    showError(e.message);
    return;
  }
  const panel = el("div", "request undo-panel");
  panel.dataset.testid = "undo-panel";
  const what = mark.turns === 1 ? "this turn" : `this turn and the ${mark.turns - 1} after it`;
  panel.append(el("div", "request-title", preview.refused ? "Nothing can be undone" : `Undo ${what}?`));
  if (preview.refused) {
    panel.append(el("div", "request-body", preview.refused));
  } else {
    const lists = [
      fileList("Restores", preview.restored, (p) => p),
      fileList("Removes (created by the turns)", preview.removed, (p) => p),
      fileList("Leaves as they are", preview.left, (i) => `${i.path}: ${i.why}`),
      fileList("Cannot restore (not recorded)", preview.not_covered, (i) => (i.path ? `${i.path}: ${i.why}` : i.why)),
    ].filter(Boolean);
    if (!lists.length) lists.push(el("div", "request-body", "The turns changed no files."));
    panel.append(...lists);
    if (preview.conversation) panel.append(el("div", "request-body", preview.conversation));
  }
  const buttons = el("div", "buttons");
  let force = null;
  if (!preview.refused && preview.left.length) {
    force = el("input");
    force.type = "checkbox";
    const label = el("label");
    label.append(force, " Also overwrite files changed since the turn");
    buttons.append(label);
  }
  const close = () => { panel.remove(); entry.bar.querySelector("button.undo")?.removeAttribute("disabled"); };
  if (!preview.refused) {
    const go = el("button", "approve", "Undo");
    go.type = "button";
    go.onclick = () => {
      api(`/api/sessions/${state.session}/undo`, { turns: mark.turns, seq: mark.seq, force: !!(force && force.checked) })
        .then(() => panel.remove()).catch((e) => showError(e.message));
    };
    buttons.append(go);
  }
  const cancel = el("button", "", preview.refused ? "Close" : "Cancel");
  cancel.type = "button";
  cancel.onclick = close;
  buttons.append(cancel);
  panel.append(buttons);
  entry.bar.querySelector("button.undo")?.setAttribute("disabled", "");
  for (const old of entry.bar.querySelectorAll(".undo-panel")) old.remove();
  entry.bar.append(panel);
  panel.querySelector("button.approve, button")?.focus();
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

// A card's parts, made when first needed, always in this order.
const SLOTS = ["tool-head", "tool-body", "tool-requests", "tool-display", "tool-steps", "live-output", "tool-result", "tool-output", "tool-note"];
const SLOT_LABELS = { "live-output": "Output so far", "tool-output": "Tool output" };

function slot(card, cls) {
  for (const child of card.children) if (child.classList.contains(cls)) return child;
  const node = SLOT_LABELS[cls] ? scroller(el("pre", cls), SLOT_LABELS[cls]) : el("div", cls);
  const later = SLOTS.slice(SLOTS.indexOf(cls) + 1);
  const next = [...card.children].find((c) => later.some((l) => c.classList.contains(l)));
  card.insertBefore(node, next || null);
  return node;
}

function dropSlot(card, cls) {
  for (const child of card.children) if (child.classList.contains(cls)) { child.remove(); return; }
}

function toolCard(id, name, args) {
  let card = state.tools[id];
  if (card) return card;
  card = el("div", "tool running");
  state.running.add(card);
  card.dataset.testid = "tool-card";
  card.dataset.toolCallId = id;
  card.dataset.name = name || "";
  const head = el("div", "tool-head");
  const summary = Cards.summary(name, args);
  const argsNode = el("span", "tool-args", summary);
  argsNode.title = summary;
  head.append(el("span", "tool-name", name || "tool"), argsNode);
  card.append(head);
  const body = Cards.argsBody(name, args);
  if (body) slot(card, "tool-body").append(body);
  currentRun().node.append(card);
  state.tools[id] = card;
  // A new step's text goes below its tools.
  currentRun().answer = null; currentRun().thinking = null;
  return card;
}

function showCounts(card, blocks) {
  const { added, removed } = Cards.diffCounts(blocks);
  if (!added && !removed) return;
  const head = card.querySelector(".tool-head");
  let counts = head.querySelector(".tool-counts");
  if (!counts) { counts = el("span", "tool-counts"); counts.dataset.testid = "counts"; head.append(counts); }
  counts.replaceChildren(el("span", "count-add", `+${added}`), " ", el("span", "count-del", `−${removed}`));
}

// The model's text as Markdown (markdown.js: DOM nodes, never its HTML). Chunks only append to
// the node's text; it is rendered once per frame, and a replayed history once at its end.
const pending = new Set();

function appendText(node, text) {
  node.mdText = (node.mdText || "") + text;
  if (!pending.size && !state.replaying) requestAnimationFrame(flushText);
  pending.add(node);
}

function flushText() {
  for (const node of pending) {
    window.kimiMarkdown.renderInto(node, node.mdText);
    decorate(node);
  }
  pending.clear();
  scrollDown();
}

// Code blocks: reachable by keyboard (they scroll sideways), and coloured once complete.
function decorate(node) {
  for (const box of node.querySelectorAll(".md-code")) {
    const pre = box.querySelector("pre");
    if (pre && !pre.hasAttribute("tabindex")) scroller(pre, "Code");
    if (!box.classList.contains("open")) {
      const code = box.querySelector("pre > code");
      if (code) window.kimiHighlight.highlight(code);
    }
  }
}

function approvalCard(req) {
  const card = el("div", "request approval");
  card.dataset.testid = "approval";
  card.append(el("div", "request-title", `${req.sender} wants to ${req.action}`), el("div", "request-body", req.description));
  if (req.warning) card.append(el("div", "request-warning", `Warning: ${req.warning}`));
  if (req.sandbox) card.append(el("div", "request-sandbox", req.sandbox));  // the sandbox it runs in, or leaves
  const display = el("div", "request-display");
  Cards.renderDisplay(display, req.display);
  const tool = state.tools[req.tool_call_id];
  if (tool) showCounts(tool, req.display);
  const feedback = el("input", "feedback");
  feedback.placeholder = "Feedback for the agent (with Reject)";
  feedback.setAttribute("aria-label", "Feedback for the agent (sent with Reject)");
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
    other.setAttribute("aria-label", q.other_label || "Or answer in your own words");
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
  state.open.add(req.id);
  card.dataset.forTool = req.tool_call_id;
  const tool = state.tools[req.tool_call_id];
  if (tool) slot(tool, "tool-requests").append(card);
  else currentRun().node.append(card);
  scrollDown();
}

function closeRequest(id, response) {
  const card = state.requests[id];
  if (!card || card.classList.contains("done")) return;
  state.open.delete(id);
  card.classList.add("done");
  for (const input of card.querySelectorAll("button, input")) input.disabled = true;
  const labels = { approve: "Approved", approve_for_session: "Approved for session", reject: "Rejected", answered: "Answered" };
  card.append(el("div", "resolution", labels[response] || "No longer waiting"));
  // Approved: what was approved (the diff, the command) stays in the card until the result replaces it.
  const tool = state.tools[card.dataset.forTool];
  const shown = card.querySelector(".request-display");
  if (tool && shown && shown.childNodes.length && String(response).startsWith("approve")) {
    const display = slot(tool, "tool-display");
    if (!display.childNodes.length) display.append(...shown.childNodes);
  }
}

function planTarget() {
  const cards = Object.values(state.tools);
  for (let i = cards.length - 1; i >= 0; i--) {
    if (cards[i].dataset.name === "ExitPlanMode") return slot(cards[i], "tool-body");
  }
  return currentRun().node;
}

function subagentEvent(p) {
  const card = state.tools[p.parent_tool_call_id];
  if (!card) return;
  const e = p.event || {};
  const params = e.params || {};
  let steps = card.querySelector(".tool-steps ol");
  if (!steps) {
    const box = slot(card, "tool-steps");
    box.append(el("div", "steps-title", `Subagent${p.subagent_type ? " (" + p.subagent_type + ")" : ""}: its steps`));
    steps = el("ol", "steps");
    steps.dataset.testid = "subagent-steps";
    box.append(steps);
  }
  if (e.method === "ToolCallBegin") {
    const step = el("li", "step running");
    step.dataset.stepId = params.tool_call_id;
    step.append(el("span", "tool-name", params.name), " ", el("span", "tool-args", Cards.summary(params.name, params.arguments)));
    steps.append(step);
    steps.said = null;
  } else if (e.method === "ToolResult") {
    const step = [...steps.children].find((s) => s.dataset.stepId === params.tool_call_id);
    if (step) {
      step.classList.remove("running");
      step.classList.toggle("failed", String(params.content || "").startsWith("ERROR"));
    }
  } else if (e.method === "TextDelta") {
    if (!steps.said) { steps.said = el("li", "step said md"); steps.append(steps.said); }
    appendText(steps.said, params.text);
  }
  scrollDown();
}

function splitSummary(content) {
  const at = content.indexOf("\n[summary]\n");
  if (at < 0) return ["", content];
  return [content.slice(0, at).trim().split("\n").join(" · "), content.slice(at + "\n[summary]\n".length)];
}

function setStatus(s) {
  if (!s) return;
  state.busy = !!s.busy;
  $("session-title").textContent = s.title || "Untitled";
  document.title = `${s.title || "Untitled"} · kimi web`;
  $("plan-mode").checked = !!s.plan_mode;
  $("always-ask").checked = !!s.always_ask;
  if (s.model) $("model").value = s.model;
  $("state").textContent = state.busy ? "working" : "idle";
  $("state").classList.toggle("busy", state.busy);
  $("cancel").disabled = !state.busy;
  $("model").disabled = state.busy;
  // Enter while the agent works adds to the running turn: the box says so.
  $("send").textContent = state.busy ? "Steer" : "Send";
  $("composer-hint").textContent = state.busy
    ? "The agent is working: Enter steers it (adds your text to this turn). Esc cancels the turn."
    : "Enter sends, Shift+Enter for a new line.";
}

// The replayed runs nearest the end are laid out at once; those before only when scrolled to
// (content-visibility), so opening a long session lays out a screenful, not all of it.
const NEAR_RUNS = 10;

function markPainted() {
  const t = window.kimiTimings;
  t.historyEnd = performance.now();
  requestAnimationFrame(() => setTimeout(() => { t.painted = performance.now(); }, 0));
}

const handlers = {
  Reset(p) {
    window.kimiTimings.reset = performance.now();
    $("transcript").replaceChildren(); pending.clear();
    state.run = null; state.tools = {}; state.requests = {}; state.runs = []; state.follow = true;
    state.running.clear(); state.open.clear();
    state.replaying = true; state.buffer = document.createDocumentFragment();
    setStatus(p);
  },
  HistoryEnd(p) {
    if (state.replaying) {
      window.kimiTimings.replayed = performance.now();
      flushText(); // every replayed text, rendered once, still off-screen
      window.kimiTimings.rendered = performance.now();
      state.replaying = false;
      const runs = [...state.buffer.children].filter((node) => node.classList.contains("run"));
      for (const run of runs.slice(0, -NEAR_RUNS)) run.classList.add("far");
      $("transcript").append(state.buffer);
      state.buffer = null;
    }
    setStatus(p);
    scrollDown(true);
    markPainted();
  },
  Status(p) { setStatus(p); loadSessions().catch(() => {}); },
  RunBegin(p) { startRun(p.user_input, true); scrollDown(); },
  Undo(p) { markUndo(p); },
  TurnBegin() {},
  TextDelta(p) { appendText(answerNode(currentRun()), p.text); },
  ReasoningDelta(p) { appendText(thinkingNode(currentRun()), p.text); },
  ToolCallBegin(p) { toolCard(p.tool_call_id, p.name, p.arguments); scrollDown(); },
  StepEnd() {},
  ToolResult(p) {
    const card = toolCard(p.tool_call_id, p.name, "");
    card.classList.remove("running");
    state.running.delete(card);
    const name = card.dataset.name;
    const answers = name === "AskUserQuestion" ? Cards.answersView(p.content) : null;
    if (answers) {
      slot(card, "tool-result").replaceChildren(answers);
    } else if (name === "Agent" && !String(p.content).startsWith("ERROR")) {
      // "agent_id: …\nstatus: …\n\n[summary]\n<the answer>": the answer as Markdown, the rest small.
      const [meta, answer] = splitSummary(String(p.content));
      const result = slot(card, "tool-result");
      if (meta) result.append(el("div", "agent-meta muted", meta));
      const text = el("div", "md");
      text.dataset.testid = "subagent-answer";
      result.append(text);
      appendText(text, answer);
    } else if (p.content) {
      slot(card, "tool-output").textContent = p.content;
    }
    // The output the command printed before a cancel stays; a finished command's result has it all.
    if (!card.dataset.cancelled) dropSlot(card, "live-output");
    scrollDown();
  },
  ToolDisplay(p) {
    const card = toolCard(p.tool_call_id, "", "");
    card.classList.toggle("failed", p.is_error);
    if (p.cancelled) card.dataset.cancelled = "1";
    if (p.display && p.display.length) {
      const display = slot(card, "tool-display");
      display.replaceChildren();
      Cards.renderDisplay(display, p.display);
      showCounts(card, p.display);
    }
    if (/truncated/i.test(p.message || "")) {
      const note = slot(card, "tool-note");
      note.textContent = p.message;
      note.dataset.testid = "truncated";
    }
    scrollDown();
  },
  ToolOutput(p) {
    const card = state.tools[p.tool_call_id];
    if (!card) return;
    const live = slot(card, "live-output");
    const atEnd = live.scrollHeight - live.scrollTop - live.clientHeight < 20;
    live.append(p.text);
    if (live.textContent.length > 200000) live.textContent = live.textContent.slice(-200000);
    if (atEnd) live.scrollTop = live.scrollHeight;
    scrollDown();
  },
  TurnEnd() {},
  RunEnd() {
    for (const id of [...state.open]) closeRequest(id, "closed");
    for (const card of state.running) card.classList.remove("running");
    state.running.clear();
    if (state.run) state.run.node.classList.add("ended");
    state.run = null;
    scrollDown();
  },
  ApprovalRequest(p) { addRequest(p, approvalCard(p)); },
  QuestionRequest(p) { addRequest(p, questionCard(p)); },
  RequestResolved(p) { closeRequest(p.id, p.response); },
  Plan(p) {
    const box = el("div", "plan");
    box.dataset.testid = "plan";
    const head = el("div", "plan-head");
    head.append(el("strong", "", "Plan"), " ", el("span", "muted", p.file_path));
    const text = el("div", "plan-text md");
    box.append(head, text);
    planTarget().append(box);
    appendText(text, p.content);
    scrollDown();
  },
  Subagent(p) { subagentEvent(p); },
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
  const box = $("prompt");
  const text = box.value;
  if (!text.trim() || !state.session) return;
  const action = state.busy ? "steer" : "prompt";
  try {
    await api(`/api/sessions/${state.session}/${action}`, { text });
    if (box.value === text) box.value = ""; // sent: cleared (unless the user typed on meanwhile)
    if (action === "steer") {
      const note = el("div", "notice", `Steering: “${text}” reaches the agent at its next step.`);
      note.dataset.testid = "steer-note";
      currentRun().node.append(note);
      scrollDown();
    }
  } catch (e) {
    showError(`Not sent (your text is still in the box): ${e.message}`);
  }
}

window.addEventListener("DOMContentLoaded", async () => {
  window.kimiSessions.init();
  $("composer").addEventListener("submit", submitPrompt);
  $("transcript").addEventListener("scroll", onScroll, { passive: true });
  // The composer grows or shrinks (its hint, a longer prompt): the end stays in view while following.
  new ResizeObserver(() => { if (state.follow) scrollDown(); }).observe($("transcript"));
  $("prompt").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); $("composer").requestSubmit(); }
  });
  document.addEventListener("keydown", (e) => {
    if (e.key !== "Escape" || e.defaultPrevented) return;
    if (document.body.classList.contains("drawer-open")) { window.kimiSessions.setDrawer(false); return; }
    if (state.busy) { e.preventDefault(); control("cancel"); }
  });
  $("cancel").onclick = () => control("cancel");
  $("plan-mode").onchange = (e) => control("plan_mode", { enabled: e.target.checked });
  $("always-ask").onchange = (e) => control("always_ask", { enabled: e.target.checked });
  $("model").onchange = (e) => control("model", { alias: e.target.value });
  $("new-session").onclick = () => newSession().catch((e) => showError(e.message));
  window.addEventListener("hashchange", () => { if (hashSession() !== state.session) openSession(hashSession()); });
  try {
    const data = await loadSessions();
    const wanted = hashSession();
    if (wanted) openSession(wanted);
    else if (data.sessions.length) { history.replaceState(null, "", "#/" + data.sessions[0].id); openSession(data.sessions[0].id); }
    else await newSession();
  } catch (e) {
    showError(e.message);
  }
});
