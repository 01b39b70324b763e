// kimi web: what goes inside a tool's card. Arguments, results and display blocks are drawn as
// things a person reads (a question and its options, a todo list, a diff with line numbers), never
// as raw JSON. Diffs arrive as rows computed by the server (frontends/web/diffview.py).
"use strict";

(function () {
  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  // A scrolling box the keyboard can reach (axe: scrollable-region-focusable).
  function scroller(node, label) {
    node.tabIndex = 0;
    node.setAttribute("role", "group");
    node.setAttribute("aria-label", label);
    return node;
  }

  function parseArgs(text) {
    try {
      const value = JSON.parse(text || "{}");
      return value && typeof value === "object" && !Array.isArray(value) ? value : {};
    } catch (_) {
      return null; // not JSON (yet): shown as text
    }
  }

  const plural = (n, one, many) => `${n} ${n === 1 ? one : many || one + "s"}`;

  // A value as words: strings as they are, lists and objects as short "key: value" text.
  function plain(value) {
    if (value === null || value === undefined) return "";
    if (typeof value !== "object") return String(value);
    if (Array.isArray(value)) return value.map(plain).join(", ");
    return Object.entries(value).map(([k, v]) => `${k}: ${plain(v)}`).join(", ");
  }

  const TODO_LABELS = { done: "done", in_progress: "in progress", pending: "pending" };

  function todoSummary(todos) {
    if (!Array.isArray(todos)) return "read the list";
    const done = todos.filter((t) => t && t.status === "done").length;
    const active = todos.filter((t) => t && t.status === "in_progress").length;
    return `${plural(todos.length, "item")}: ${done} done, ${active} in progress`;
  }

  // The one line in the card's head.
  function summary(name, argsText) {
    const args = parseArgs(argsText);
    if (args === null) return argsText || "";
    switch (name) {
      case "AskUserQuestion": {
        const qs = Array.isArray(args.questions) ? args.questions : [];
        return qs.length === 1 ? String(qs[0].question || "") : plural(qs.length, "question");
      }
      case "Agent":
        return [args.description, args.subagent_type ? `(${args.subagent_type})` : ""].filter(Boolean).join(" ");
      case "SetTodoList":
        return todoSummary(args.todos);
      case "ExitPlanMode":
        return "the plan, for your approval";
      case "EnterPlanMode":
        return "investigate and plan first";
    }
    const first = args.command ?? args.path ?? args.pattern ?? args.url ?? args.query;
    if (typeof first === "string") return first;
    return plain(args);
  }

  // What the arguments say beyond the head line: questions, a subagent's task, the todos.
  function argsBody(name, argsText) {
    const args = parseArgs(argsText);
    if (!args) return null;
    if (name === "AskUserQuestion" && Array.isArray(args.questions)) {
      const list = el("ol", "questions");
      for (const q of args.questions) {
        const item = el("li");
        item.append(el("div", "q-text", q.question || ""));
        const options = (q.options || []).map((o) => o.label + (o.description ? ` (${o.description})` : ""));
        if (options.length) item.append(el("div", "q-options muted", (q.multi_select ? "Any of: " : "One of: ") + options.join(" · ")));
        list.append(item);
      }
      return list;
    }
    if (name === "Agent" && args.prompt) {
      const box = el("details", "agent-task");
      box.append(el("summary", "", "Task given to the subagent"), el("div", "agent-prompt", String(args.prompt)));
      return box;
    }
    return null; // SetTodoList: its result's display is the list (the head line counts it)
  }

  function todoList(items) {
    const list = el("ul", "todo");
    list.dataset.testid = "todo";
    for (const item of items) {
      const status = TODO_LABELS[item.status] ? item.status : "pending";
      const li = el("li", "todo-" + status);
      li.dataset.status = status;
      const mark = el("span", "todo-mark", status === "done" ? "✓" : status === "in_progress" ? "▶" : "○");
      mark.setAttribute("aria-hidden", "true");
      li.append(mark, el("span", "todo-title", item.title), el("span", "todo-status", TODO_LABELS[status]));
      list.append(li);
    }
    return list;
  }

  // A question's answers, from the tool's result ({"answers": {question: label or [labels]}}).
  function answersView(content) {
    let data;
    try { data = JSON.parse(content); } catch (_) { return null; }
    if (!data || typeof data !== "object" || typeof data.answers !== "object") return null;
    const box = el("dl", "answers");
    box.dataset.testid = "answers";
    const entries = Object.entries(data.answers);
    for (const [question, answer] of entries) {
      box.append(el("dt", "", question), el("dd", "", Array.isArray(answer) ? answer.join(", ") : String(answer)));
    }
    if (!entries.length) box.append(el("dd", "muted", data.note || "Dismissed without an answer."));
    return box;
  }

  // ------------------------------------------------------------------ display blocks

  function diffCounts(blocks) {
    let added = 0, removed = 0;
    for (const b of blocks || []) if (b.type === "diff") { added += b.added || 0; removed += b.removed || 0; }
    return { added, removed };
  }

  function renderDiff(block) {
    const box = el("div", "diff");
    box.dataset.testid = "diff";
    const head = el("div", "diff-path");
    head.append(el("span", "diff-file", block.path));
    if (block.is_summary) {
      head.append(el("span", "muted", ` ${block.old_text} → ${block.new_text}: too many changed lines to show`));
      box.append(head);
      return box;
    }
    const counts = el("span", "diff-counts");
    counts.append(el("span", "count-add", `+${block.added}`), " ", el("span", "count-del", `−${block.removed}`));
    head.append(counts);
    if (block.new_file) head.append(el("span", "muted", " new file"));
    const body = scroller(el("div", "diff-body"), `Changes to ${block.path}`);
    const kinds = { "+": "add", "-": "del", " ": "ctx" };
    for (const [kind, oldNo, newNo, text, span] of block.rows) {
      const row = el("div", "row " + kinds[kind]);
      const code = el("span", "code");
      if (span && span[1] > span[0]) {
        code.append(text.slice(0, span[0]), el("mark", "", text.slice(span[0], span[1])), text.slice(span[1]));
      } else {
        code.textContent = text;
      }
      row.append(el("span", "ln", oldNo ?? ""), el("span", "ln", newNo ?? ""), el("span", "sign", kind), code);
      body.append(row);
    }
    box.append(head, body);
    if (block.more > 0) {
      const more = el("div", "diff-more", `${block.more.toLocaleString("en")} more lines not shown`);
      more.dataset.testid = "diff-more";
      box.append(more);
    }
    return box;
  }

  function renderDisplay(container, blocks) {
    for (const block of blocks || []) {
      if (block.type === "diff") container.append(renderDiff(block));
      else if (block.type === "shell") container.append(scroller(el("pre", "shell-command", "$ " + block.command), "Command"));
      else if (block.type === "brief") container.append(el("div", "brief", block.text));
      else if (block.type === "todo") container.append(todoList(block.items));
      else if (block.type === "background_task") container.append(el("div", "brief", `Task ${block.task_id}: ${block.status} — ${block.description}`));
      else if (block.type === "kimi/read_only") {  // a command that ran without a question: it only reads
        const note = el("div", "brief read-only", (block.data && block.data.text) || "Ran without asking: it only reads.");
        note.dataset.testid = "read-only";
        container.append(note);
      }
    }
  }

  window.kimiCards = Object.freeze({ el, scroller, summary, argsBody, answersView, renderDisplay, renderDiff, diffCounts, todoList, parseArgs });
})();
