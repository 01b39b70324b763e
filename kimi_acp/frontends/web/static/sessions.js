// kimi web: the session list (dates, search, rename, delete), the phone drawer and the theme.
// The list is the sidebar on a wide window and a drawer (the "Sessions" button) on a phone.
"use strict";

(function () {
  const { el } = window.kimiCards;
  const $ = (id) => document.getElementById(id);
  const THEME_KEY = "kimi-theme";

  // ------------------------------------------------------------------ theme: the system's, or the user's choice

  function systemDark() {
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  }

  function effectiveTheme() {
    return document.documentElement.dataset.theme || (systemDark() ? "dark" : "light");
  }

  function applyTheme(choice) {
    if (choice === "dark" || choice === "light") document.documentElement.dataset.theme = choice;
    else delete document.documentElement.dataset.theme;
    const next = effectiveTheme() === "dark" ? "light" : "dark";
    const button = $("theme");
    button.textContent = next === "dark" ? "☾" : "☀";
    button.setAttribute("aria-label", `Switch to the ${next} theme`);
    button.title = `Switch to the ${next} theme`;
  }

  function toggleTheme() {
    const next = effectiveTheme() === "dark" ? "light" : "dark";
    // Back to following the system when the choice is what the system says anyway.
    const choice = next === (systemDark() ? "dark" : "light") ? "" : next;
    try { if (choice) localStorage.setItem(THEME_KEY, choice); else localStorage.removeItem(THEME_KEY); } catch (_) { /* private mode */ }
    applyTheme(choice);
  }

  function initTheme() {
    let saved = "";
    try { saved = localStorage.getItem(THEME_KEY) || ""; } catch (_) { /* private mode */ }
    applyTheme(saved);
    $("theme").onclick = toggleTheme;
    if (window.matchMedia) window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => applyTheme(document.documentElement.dataset.theme || ""));
  }

  // ------------------------------------------------------------------ the drawer (phones)

  function setDrawer(open) {
    document.body.classList.toggle("drawer-open", open);
    $("drawer-toggle").setAttribute("aria-expanded", open ? "true" : "false");
    if (open) $("session-search").focus();
  }

  // ------------------------------------------------------------------ the list

  const sameDay = (a, b) => a.toDateString() === b.toDateString();

  function when(seconds) {
    const date = new Date(seconds * 1000);
    const now = new Date();
    if (sameDay(date, now)) return date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    const yesterday = new Date(now.getTime() - 86400000);
    if (sameDay(date, yesterday)) return "yesterday";
    const options = date.getFullYear() === now.getFullYear() ? { month: "short", day: "numeric" } : { year: "numeric", month: "short", day: "numeric" };
    return date.toLocaleDateString([], options);
  }

  function filter() {
    const words = $("session-search").value.toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0;
    for (const item of $("sessions").children) {
      const title = (item.dataset.title || "").toLowerCase();
      const match = words.every((w) => title.includes(w));
      item.hidden = !match;
      if (match) shown++;
    }
    $("sessions-empty").hidden = shown > 0 || !$("sessions").children.length;
  }

  function render(list, current, actions) {
    const ul = $("sessions");
    ul.replaceChildren();
    for (const s of list) {
      const item = el("li", s.id === current ? "current" : "");
      item.dataset.sessionId = s.id;
      item.dataset.title = s.title || "Untitled";
      const link = el("a", "session-link");
      link.href = "#/" + s.id;
      link.title = s.title || "Untitled";
      if (s.id === current) link.setAttribute("aria-current", "page");
      const time = el("time", "session-date", when(s.updated_at));
      time.dateTime = new Date(s.updated_at * 1000).toISOString();
      link.append(el("span", "session-title", s.title || "Untitled"), time);
      if (s.busy) link.append(el("span", "dot", " ● working"));
      const rename = el("button", "icon rename", "✎");
      rename.type = "button";
      rename.setAttribute("aria-label", `Rename “${s.title || "Untitled"}”`);
      rename.onclick = () => startRename(item, s, actions);
      const del = el("button", "icon delete", "✕");
      del.type = "button";
      del.setAttribute("aria-label", `Delete “${s.title || "Untitled"}”`);
      del.onclick = () => confirmDelete(item, s, actions);
      item.append(link, rename, del);
      ul.append(item);
    }
    filter();
  }

  function startRename(item, s, actions) {
    const input = el("input", "rename-input");
    input.value = s.title || "";
    input.setAttribute("aria-label", "New title");
    let finished = false;
    const done = (save) => {
      if (finished) return;
      finished = true;
      if (save && input.value.trim() && input.value.trim() !== s.title) actions.rename(s.id, input.value.trim());
      else actions.refresh();
    };
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") { e.preventDefault(); done(true); }
      if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); done(false); }
    });
    input.addEventListener("blur", () => done(true), { once: true });
    item.replaceChildren(input);
    input.focus();
    input.select();
  }

  function confirmDelete(item, s, actions) {
    const box = el("div", "confirm");
    box.append(el("span", "", `Delete “${s.title || "Untitled"}”?`));
    const yes = el("button", "reject", "Delete");
    yes.type = "button";
    yes.onclick = () => actions.remove(s.id);
    const no = el("button", "", "Keep");
    no.type = "button";
    no.onclick = () => actions.refresh();
    box.append(yes, no);
    item.replaceChildren(box);
    no.focus();
  }

  function init() {
    initTheme();
    $("drawer-toggle").onclick = () => setDrawer(!document.body.classList.contains("drawer-open"));
    $("backdrop").onclick = () => setDrawer(false);
    $("session-search").addEventListener("input", filter);
    $("sessions").addEventListener("click", (e) => { if (e.target.closest("a")) setDrawer(false); });
  }

  window.kimiSessions = Object.freeze({ init, render, setDrawer, when });
})();
