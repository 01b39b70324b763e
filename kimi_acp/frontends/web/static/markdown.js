// kimi web: a small Markdown renderer for the model's text (CommonMark's common subset plus GFM
// tables, strikethrough, task items and bare URLs). Written for this page, no library.
//
// The text is untrusted, so the output is built as DOM nodes: text only ever goes in as text
// nodes (never innerHTML), raw HTML shows as text, links are made only for http, https and mailto
// URLs (rel="noopener noreferrer", target="_blank"), images are never loaded (an image becomes a
// link to it), and a code block's language is used as a class only when it is a plain word.
//
// window.kimiMarkdown: render(text) -> DocumentFragment, toHTML(text) -> string (for tests),
// renderInto(node, text): re-renders in place, keeping the top-level blocks that did not change
// (a streamed reply re-rendered at each chunk only rebuilds its last block), safeUrl(url).
"use strict";

(function () {
  const ASCII_PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
  const PUNCT = /[\p{P}\p{S}]/u;
  const SPACE = /\s/u;
  const MAX_DEPTH = 16; // nested quotes/lists deeper than this render as text
  const MAX_LINK_DEST = 4096; // a link's destination and title, at most

  // ---------------------------------------------------------------- lines and indentation

  function indentOf(line) {
    let col = 0;
    for (const ch of line) {
      if (ch === " ") col += 1;
      else if (ch === "\t") col += 4 - (col % 4);
      else break;
    }
    return col;
  }

  // The line without its first `n` columns of leading whitespace (tabs count to the next stop of 4).
  function stripCols(line, n) {
    let col = 0;
    let i = 0;
    while (i < line.length && col < n) {
      if (line[i] === " ") col += 1;
      else if (line[i] === "\t") {
        const next = col + 4 - (col % 4);
        if (next > n) return " ".repeat(next - n) + line.slice(i + 1);
        col = next;
      } else break;
      i += 1;
    }
    return line.slice(i);
  }

  const isBlank = (line) => /^[ \t]*$/.test(line);

  const FENCE = /^( {0,3})(`{3,}|~{3,})(.*)$/;
  const ATX = /^ {0,3}(#{1,6})(?:[ \t]|$)/;
  const HR = /^ {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$/;
  const QUOTE = /^ {0,3}> ?/;
  const SETEXT = /^ {0,3}(={3,}|-{3,})[ \t]*$/;
  const BULLET = /^( {0,3})([-+*])([ \t]+|$)/;
  const ORDERED = /^( {0,3})(\d{1,9})([.)])([ \t]+|$)/;
  const TASK = /^\[([ xX])\][ \t]+/;

  // An ATX heading's text: without its closing run of #s (when a space comes before it).
  function headingText(rest) {
    let text = rest.trim();
    let end = text.length;
    while (end > 0 && text[end - 1] === "#") end--;
    if (end === 0) return "";
    if (end < text.length && (text[end - 1] === " " || text[end - 1] === "\t")) text = text.slice(0, end).trim();
    return text;
  }

  function fenceOpen(line) {
    const m = FENCE.exec(line);
    if (!m || (m[2][0] === "`" && m[3].includes("`"))) return null;
    return { indent: m[1].length, fence: m[2], info: m[3].trim() };
  }

  // A list item's marker: its kind and the column where its content starts.
  function listMarker(line) {
    const m = BULLET.exec(line) || ORDERED.exec(line);
    if (!m) return null;
    const ordered = m.length === 5;
    const marker = ordered ? m[2] + m[3] : m[2];
    const gap = ordered ? m[4] : m[3];
    const rest = line.slice(m[0].length);
    const indent = m[1].length;
    let spaces = indentOf(" ".repeat(indent + marker.length) + gap) - indent - marker.length;
    if (spaces > 4 || rest === "") spaces = 1; // indented code in an item, or an empty first line
    const width = indent + marker.length;
    return {
      first: stripCols(" ".repeat(width) + line.slice(width), indent + marker.length + spaces), // the content
      ordered,
      delim: ordered ? m[3] : m[2],
      start: ordered ? parseInt(m[2], 10) : 1,
      indent,
      content: indent + marker.length + spaces,
      empty: rest.trim() === "",
    };
  }

  // Cells of a table row: split on unescaped pipes, without the outer ones.
  function splitRow(line) {
    let s = line.trim();
    if (s.startsWith("|")) s = s.slice(1);
    if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
    const cells = [];
    let cell = "";
    for (let i = 0; i < s.length; i++) {
      if (s[i] === "\\" && s[i + 1] === "|") { cell += "|"; i++; continue; }
      if (s[i] === "|") { cells.push(cell.trim()); cell = ""; continue; }
      cell += s[i];
    }
    cells.push(cell.trim());
    return cells;
  }

  // A table's delimiter row (`| :-- | --: |`): each column's alignment, or null.
  function delimiterRow(line) {
    if (indentOf(line) > 3 || !/^[ \t|:-]+$/.test(line) || !line.includes("-")) return null;
    const cells = splitRow(line);
    if (!cells.every((c) => /^:?-+:?$/.test(c)) || (cells.length === 1 && !line.includes("|"))) return null;
    return cells.map((c) => (c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : c.startsWith(":") ? "left" : ""));
  }

  function tableAt(lines, i) {
    if (i + 1 >= lines.length || !lines[i].includes("|") || indentOf(lines[i]) > 3) return null;
    const align = delimiterRow(lines[i + 1]);
    if (!align) return null;
    const head = splitRow(lines[i]);
    return head.length === align.length ? { head, align } : null;
  }

  // Does `line` start a block other than a paragraph? `inPara`: could it end a paragraph?
  function startsBlock(line, inPara) {
    if (fenceOpen(line) || ATX.test(line) || HR.test(line) || QUOTE.test(line)) return true;
    const m = listMarker(line);
    if (m && (!inPara || (!m.empty && m.start === 1))) return true;
    return !inPara && indentOf(line) >= 4;
  }

  // ---------------------------------------------------------------- blocks

  function parseBlocks(lines, depth) {
    const blocks = [];
    let i = 0;
    while (i < lines.length) {
      if (isBlank(lines[i])) { i++; continue; }
      const start = i;
      const [block, next] = parseBlock(lines, i, depth);
      block.from = start; // its lines: from <= line < to
      block.to = next;
      blocks.push(block);
      i = next;
    }
    return blocks;
  }

  function parseBlock(lines, i, depth) {
    const line = lines[i];
    const fence = fenceOpen(line);
    if (fence) {
      const body = [];
      let j = i + 1;
      let open = true;
      for (; j < lines.length; j++) {
        if (fenceCloses(fence, lines[j])) { open = false; j++; break; }
        body.push(stripCols(lines[j], fence.indent));
      }
      const lang = unescapeText(fence.info.split(/[ \t]/)[0] || "");
      return [{ type: "code", lang, text: body.join("\n"), open }, j];
    }
    if (indentOf(line) >= 4) {
      const body = [];
      let j = i;
      for (; j < lines.length && (isBlank(lines[j]) || indentOf(lines[j]) >= 4); j++) body.push(stripCols(lines[j], 4));
      while (body.length && isBlank(body[body.length - 1])) { body.pop(); j--; }
      return [{ type: "code", lang: "", text: body.join("\n"), open: false }, j];
    }
    const atx = ATX.exec(line);
    if (atx) return [{ type: "heading", level: atx[1].length, text: headingText(line.slice(atx[0].length)) }, i + 1];
    if (HR.test(line)) return [{ type: "hr" }, i + 1];
    if (depth < MAX_DEPTH && QUOTE.test(line)) return parseQuote(lines, i, depth);
    const marker = depth < MAX_DEPTH ? listMarker(line) : null;
    if (marker) return parseList(lines, i, marker, depth);
    const table = tableAt(lines, i);
    if (table) return parseTable(lines, i, table);
    return parseParagraph(lines, i);
  }

  function parseParagraph(lines, i) {
    const body = [lines[i].trim()];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const line = lines[j];
      if (isBlank(line)) break;
      const setext = SETEXT.exec(line);
      if (setext) return [{ type: "heading", level: setext[1][0] === "=" ? 1 : 2, text: body.join("\n") }, j + 1];
      if (startsBlock(line, true) || tableAt(lines, j)) break;
      body.push(line.replace(/^[ \t]+/, ""));
    }
    return [{ type: "para", text: body.join("\n") }, j];
  }

  function parseQuote(lines, i, depth) {
    const inner = new Collected();
    let j = i;
    for (; j < lines.length; j++) {
      const line = lines[j];
      if (QUOTE.test(line)) { inner.push(line.replace(QUOTE, "")); continue; }
      // A lazy continuation line: more of the paragraph the quote ends with.
      if (isBlank(line) || isBlank(inner.last) || startsBlock(line, true) || inner.fence) break;
      inner.push(line);
    }
    return [{ type: "quote", children: parseBlocks(inner.lines, depth + 1) }, j];
  }

  const fenceCloses = (fence, line) => {
    const close = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(line);
    return !!close && close[1][0] === fence.fence[0] && close[1].length >= fence.fence.length;
  };

  // Lines collected for a container, knowing whether they end inside an open code fence.
  class Collected {
    constructor() { this.lines = []; this.fence = null; }
    push(line) {
      this.lines.push(line);
      if (!this.fence) this.fence = fenceOpen(line);
      else if (fenceCloses(this.fence, line)) this.fence = null;
    }
    get last() { return this.lines[this.lines.length - 1]; }
  }

  function parseList(lines, i, first, depth) {
    const items = [];
    let tight = true;
    let j = i;
    while (j < lines.length) {
      const m = listMarker(lines[j]);
      if (!m || m.ordered !== first.ordered || m.delim !== first.delim) break;
      if (items.length && HR.test(lines[j])) break;
      const body = new Collected();
      body.push(m.empty ? "" : m.first);
      let k = j + 1;
      let blanks = 0;
      for (; k < lines.length; k++) {
        const line = lines[k];
        if (isBlank(line)) { blanks++; body.push(stripCols(line, m.content)); continue; }
        const ind = indentOf(line);
        const sub = listMarker(line);
        if (ind >= m.content) body.push(stripCols(line, m.content));
        else if (sub && ind > m.indent) body.push(stripCols(line, ind)); // a nested list, indented less than CommonMark wants
        else if (!blanks && !sub && !startsBlock(line, true) && !body.fence && !isBlank(body.last)) body.push(line); // lazy
        else break;
        blanks = 0;
      }
      // Trailing blank lines are not the item's; between two items they make the list loose.
      while (body.lines.length > 1 && isBlank(body.last)) { body.lines.pop(); k--; }
      const children = parseBlocks(body.lines, depth + 1);
      for (let c = 1; c < children.length; c++) if (children[c].from > children[c - 1].to) tight = false;
      items.push({ children, task: null });
      j = k;
      let after = j;
      while (after < lines.length && isBlank(lines[after])) after++;
      const next = after < lines.length ? listMarker(lines[after]) : null;
      if (!next || next.ordered !== first.ordered || next.delim !== first.delim || next.indent >= m.content) break;
      if (after > j) tight = false;
      j = after;
    }
    for (const item of items) {
      const head = item.children[0];
      const task = head && head.type === "para" ? TASK.exec(head.text) : null;
      if (task) { item.task = task[1] !== " "; head.text = head.text.slice(task[0].length); }
    }
    return [{ type: "list", ordered: first.ordered, start: first.start, tight, items }, j];
  }

  function parseTable(lines, i, table) {
    const rows = [];
    let j = i + 2;
    for (; j < lines.length; j++) {
      const line = lines[j];
      if (isBlank(line) || startsBlock(line, true)) break;
      const cells = splitRow(line).slice(0, table.head.length);
      while (cells.length < table.head.length) cells.push("");
      rows.push(cells);
    }
    return [{ type: "table", head: table.head, align: table.align, rows }, j];
  }

  // ---------------------------------------------------------------- inline

  function unescapeText(s) {
    return s.replace(/\\([!-/:-@[-`{-~])/g, "$1");
  }

  const ENTITY = /^&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z]{2,8});/;
  const NAMED = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0", copy: "\u00a9", reg: "\u00ae",
    mdash: "\u2014", ndash: "\u2013", hellip: "\u2026", rarr: "\u2192", larr: "\u2190", times: "\u00d7" };

  // An HTML character reference as the text it stands for (it only ever becomes text), or null.
  function entity(ref) {
    if (ref[0] !== "#") return Object.hasOwn(NAMED, ref) ? NAMED[ref] : null;
    const code = ref[1] === "x" || ref[1] === "X" ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
    return code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff) ? "\ufffd" : String.fromCodePoint(code);
  }

  function decodeEntities(s) {
    return s.replace(/&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z]{2,8});/g, (whole, ref) => entity(ref) ?? whole);
  }

  // The safe href for a URL, or null: only absolute http, https and mailto URLs.
  function safeUrl(raw) {
    let url;
    try {
      url = new URL(String(raw).trim());
    } catch (_) {
      return null;
    }
    return ["http:", "https:", "mailto:"].includes(url.protocol) ? url.href : null;
  }

  // One pass over an inline text: its backtick runs (length -> positions, in order) and, for each
  // "[", the "]" that closes it (not inside a code span, not escaped). Keeps the parsing linear.
  function indexInline(s) {
    const runs = new Map();
    for (const m of s.matchAll(/`+/g)) {
      if (!runs.has(m[0].length)) runs.set(m[0].length, []);
      runs.get(m[0].length).push(m.index);
    }
    const ix = { runs, brackets: new Map() };
    const open = [];
    for (let j = 0; j < s.length; j++) {
      const ch = s[j];
      if (ch === "\\") j++;
      else if (ch === "`") {
        let n = 1;
        while (s[j + n] === "`") n++;
        const end = codeSpanEnd(ix, j + n, n);
        j = (end < 0 ? j : end) + n - 1;
      } else if (ch === "[") open.push(j);
      else if (ch === "]" && open.length) ix.brackets.set(open.pop(), j);
    }
    return ix;
  }

  // Where the code span closes whose opening run of `n` backticks ends at `i`, or -1.
  function codeSpanEnd(ix, i, n) {
    const at = ix.runs.get(n) || [];
    let lo = 0;
    let hi = at.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (at[mid] < i) lo = mid + 1;
      else hi = mid;
    }
    return lo < at.length ? at[lo] : -1;
  }

  const skipSpace = (s, k) => { while (s[k] === " " || s[k] === "\t" || s[k] === "\n") k++; return k; };

  // `[text](dest "title")` with s[i] === "[": { text, dest, end } or null.
  function linkAt(s, i, ix) {
    const j = ix.brackets.get(i);
    if (j === undefined || s[j + 1] !== "(") return null;
    const text = s.slice(i + 1, j);
    const limit = Math.min(s.length, j + 2 + MAX_LINK_DEST);
    let k = skipSpace(s, j + 2);
    let dest = "";
    if (s[k] === "<") {
      const from = k + 1;
      for (k = from; k < limit && s[k] !== ">"; k++) if (s[k] === "<" || s[k] === "\n") return null;
      if (k >= limit) return null;
      dest = s.slice(from, k);
      k += 1;
    } else {
      let parens = 0;
      const from = k;
      for (; k < limit; k++) {
        const code = s.charCodeAt(k);
        if (code === 92 && k + 1 < limit) { k++; continue; } // a backslash escape
        if (code <= 32 || code === 127) break;
        if (code === 40 && ++parens > 32) return null; // as cmark: no deeper nesting
        else if (code === 41) { if (parens === 0) break; parens--; }
      }
      if (k >= limit) return null;
      dest = s.slice(from, k);
    }
    k = skipSpace(s, k);
    const quote = { '"': '"', "'": "'", "(": ")" }[s[k]];
    if (quote) {
      for (k += 1; k < limit && s[k] !== quote; k++) if (s[k] === "\\") k++;
      if (k >= limit) return null;
      k = skipSpace(s, k + 1);
    }
    if (s[k] !== ")") return null;
    return { text, dest: decodeEntities(unescapeText(dest)), end: k + 1 };
  }

  function bareUrlAt(s, i) {
    if (i > 0 && !/[\s(*_~]/.test(s[i - 1])) return null;
    const m = /^https?:\/\/[^\s<>]+/i.exec(s.slice(i, i + 2048));
    if (!m) return null;
    // Not its trailing punctuation, nor a closing parenthesis it did not open (GFM's rule).
    const url = m[0];
    let opened = 0;
    for (const ch of url) opened += ch === "(" ? 1 : ch === ")" ? -1 : 0;
    let end = url.length;
    for (;;) {
      if (end && "?!.,:;*_~'\"".includes(url[end - 1])) end--;
      else if (end && url[end - 1] === ")" && opened < 0) { end--; opened++; }
      else break;
    }
    return end > url.indexOf("//") + 2 ? url.slice(0, end) : null;
  }

  function flanking(s, start, end) {
    const before = start > 0 ? s[start - 1] : " ";
    const after = end < s.length ? s[end] : " ";
    const left = !SPACE.test(after) && (!PUNCT.test(after) || SPACE.test(before) || PUNCT.test(before));
    const right = !SPACE.test(before) && (!PUNCT.test(before) || SPACE.test(after) || PUNCT.test(after));
    return { left, right, before, after };
  }

  // Inline Markdown to a tree: {t: "text"|"code"|"br"|"em"|"strong"|"del"|"link"|"nolink", ...}.
  function parseInline(s, inLink) {
    const ix = indexInline(s);
    const toks = [];
    let buf = "";
    const flush = () => { if (buf) { toks.push({ t: "text", v: buf }); buf = ""; } };
    let i = 0;
    while (i < s.length) {
      const ch = s[i];
      if (ch === "\\") {
        const next = s[i + 1];
        if (next === "\n") { flush(); toks.push({ t: "br" }); i += 2; continue; }
        if (next !== undefined && ASCII_PUNCT.includes(next)) { buf += next; i += 2; continue; }
        buf += ch; i++; continue;
      }
      if (ch === "`") {
        let n = 1;
        while (s[i + n] === "`") n++;
        const end = codeSpanEnd(ix, i + n, n);
        if (end < 0) { buf += "`".repeat(n); i += n; continue; }
        let code = s.slice(i + n, end).replace(/\n/g, " ");
        if (code.length > 2 && code[0] === " " && code[code.length - 1] === " " && code.trim()) code = code.slice(1, -1);
        flush(); toks.push({ t: "code", v: code }); i = end + n; continue;
      }
      if (ch === "\n") { // every line break shows, as in a chat (GitHub's comments do the same)
        buf = buf.replace(/[ \t]+$/, "");
        flush(); toks.push({ t: "br" }); i++;
        while (s[i] === " " || s[i] === "\t") i++;
        continue;
      }
      if (ch === "&") {
        const ref = ENTITY.exec(s.slice(i, i + 12));
        const decoded = ref && entity(ref[1]);
        if (decoded !== null) { buf += decoded; i += ref[0].length; continue; }
      }
      if (ch === "<") {
        const auto = /^<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*)>/.exec(s.slice(i, i + 2048));
        const mail = /^<([A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*)>/.exec(s.slice(i, i + 512));
        const href = auto ? safeUrl(auto[1]) : mail ? safeUrl("mailto:" + mail[1]) : null;
        if (href && !inLink) {
          flush(); toks.push({ t: "link", href, c: [{ t: "text", v: (auto || mail)[1] }] });
          i += (auto || mail)[0].length; continue;
        }
      }
      if (!inLink && (ch === "[" || (ch === "!" && s[i + 1] === "["))) {
        const image = ch === "!";
        const link = linkAt(s, image ? i + 1 : i, ix);
        if (link) {
          flush();
          const href = safeUrl(link.dest);
          const c = image ? [{ t: "text", v: unescapeText(link.text) || link.dest }] : parseInline(link.text, true);
          if (href) toks.push({ t: "link", href, image, c });
          else toks.push({ t: "nolink", dest: link.dest, c });
          i = link.end; continue;
        }
      }
      if (!inLink && (ch === "h" || ch === "H")) {
        const url = bareUrlAt(s, i);
        const href = url && safeUrl(url);
        if (href) { flush(); toks.push({ t: "link", href, c: [{ t: "text", v: url }] }); i += url.length; continue; }
      }
      if (ch === "*" || ch === "_" || ch === "~") {
        let n = 1;
        while (s[i + n] === ch) n++;
        if (ch === "~" && n !== 2) { buf += ch.repeat(n); i += n; continue; }
        const f = flanking(s, i, i + n);
        let open = f.left;
        let close = f.right;
        if (ch === "_") {
          open = f.left && (!f.right || PUNCT.test(f.before));
          close = f.right && (!f.left || PUNCT.test(f.after));
        }
        flush();
        toks.push({ t: "delim", ch, n, orig: n, open, close });
        i += n; continue;
      }
      buf += ch; i++;
    }
    flush();
    return emphasis(toks);
  }

  // CommonMark's "process emphasis": match closers with the nearest opener, left to right, on a
  // linked list (linear splicing); `bottom` remembers, per kind of closer, where no opener matches.
  function emphasis(toks) {
    const head = { t: "head", pos: -1, next: null };
    let last = head;
    toks.forEach((tok, k) => { tok.pos = k; tok.prev = last; last.next = tok; last = tok; });
    last.next = null;
    const unlink = (tok) => { tok.prev.next = tok.next; if (tok.next) tok.next.prev = tok.prev; };
    const bottom = {};
    let c = head.next;
    while (c) {
      if (c.t !== "delim" || !c.close || c.n === 0) { c = c.next; continue; }
      const kind = c.ch + c.open + (c.orig % 3);
      const floor = bottom[kind] ?? -1;
      let o = c.prev;
      for (; o.pos > floor; o = o.prev) {
        if (o.t !== "delim" || o.ch !== c.ch || !o.open || o.n === 0) continue;
        if (c.ch === "~") { if (o.n === c.n) break; continue; }
        if ((o.close || c.open) && (o.orig + c.orig) % 3 === 0 && !(o.orig % 3 === 0 && c.orig % 3 === 0)) continue;
        break;
      }
      if (o.pos <= floor) { bottom[kind] = c.pos - 0.25; c = c.next; continue; } // none: not below c again
      const use = c.ch === "~" ? 2 : o.n >= 2 && c.n >= 2 ? 2 : 1;
      const inner = [];
      for (let t = o.next; t !== c; t = t.next) inner.push(t);
      const node = { t: c.ch === "~" ? "del" : use === 2 ? "strong" : "em", c: literal(inner), pos: c.pos - 0.5, prev: o, next: c };
      o.next = node;
      c.prev = node;
      o.n -= use;
      c.n -= use;
      if (o.n === 0) unlink(o);
      if (c.n === 0) { unlink(c); c = c.next; }
    }
    const out = [];
    for (let t = head.next; t; t = t.next) out.push(t);
    return literal(out);
  }

  // Unmatched delimiters become text; adjacent texts merge.
  function literal(toks) {
    const out = [];
    for (const tok of toks) {
      const node = tok.t === "delim" ? { t: "text", v: tok.ch.repeat(tok.n) } : tok;
      if (node.t === "text" && !node.v) continue;
      const last = out[out.length - 1];
      if (node.t === "text" && last && last.t === "text") last.v += node.v;
      else out.push(node);
    }
    return out;
  }

  // ---------------------------------------------------------------- DOM

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function appendInline(parent, nodes) {
    for (const n of nodes) {
      if (n.t === "text") parent.append(document.createTextNode(n.v));
      else if (n.t === "code") parent.append(el("code", "", n.v));
      else if (n.t === "br") parent.append(el("br"));
      else if (n.t === "link") {
        const a = el("a", n.image ? "md-image" : "");
        a.href = n.href;
        a.rel = "noopener noreferrer";
        a.target = "_blank";
        if (n.image) a.title = "Image (not loaded): " + n.href;
        appendInline(a, n.c);
        parent.append(a);
      } else if (n.t === "nolink") {
        const span = el("span", "md-nolink");
        span.title = "Not a link (only http, https and mailto links are): " + n.dest;
        appendInline(span, n.c);
        parent.append(span);
      } else {
        const node = el(n.t);
        appendInline(node, n.c);
        parent.append(node);
      }
    }
    return parent;
  }

  const inline = (tag, text) => appendInline(el(tag), parseInline(text, false));

  function codeBlock(block) {
    const box = el("div", "md-code");
    const head = el("div", "md-code-head");
    const copy = el("button", "md-copy", "Copy");
    copy.type = "button";
    copy.title = "Copy the code";
    head.append(el("span", "md-lang", block.lang), copy);
    const code = el("code");
    if (/^[A-Za-z0-9_+#.-]{1,40}$/.test(block.lang)) code.className = "language-" + block.lang;
    code.textContent = block.text;
    const pre = el("pre");
    pre.append(code);
    box.append(head, pre);
    updateCode(box, block);
    return box;
  }

  function updateCode(box, block) {
    const code = box.querySelector("pre > code");
    if (code.textContent !== block.text) code.textContent = block.text;
    box.classList.toggle("open", block.open); // an unclosed fence (still streaming)
  }

  function renderBlock(block) {
    switch (block.type) {
      case "para":
        return inline("p", block.text);
      case "heading":
        return inline("h" + block.level, block.text);
      case "hr":
        return el("hr");
      case "code":
        return codeBlock(block);
      case "quote": {
        const quote = el("blockquote");
        for (const child of block.children) quote.append(renderBlock(child));
        return quote;
      }
      case "list": {
        const list = el(block.ordered ? "ol" : "ul");
        if (block.ordered && block.start !== 1) list.start = block.start;
        for (const item of block.items) {
          const li = el("li");
          if (item.task !== null) {
            li.className = "md-task";
            const box = el("input");
            box.type = "checkbox";
            box.checked = item.task;
            box.disabled = true;
            li.append(box, " ");
          }
          for (const child of item.children) {
            if (block.tight && child.type === "para") appendInline(li, parseInline(child.text, false));
            else li.append(renderBlock(child));
          }
          list.append(li);
        }
        return list;
      }
      case "table": {
        const wrap = el("div", "md-table");
        const table = el("table");
        const row = (cells, tag) => {
          const tr = el("tr");
          cells.forEach((cell, k) => {
            const td = inline(tag, cell);
            if (block.align[k]) td.className = "align-" + block.align[k];
            tr.append(td);
          });
          return tr;
        };
        const thead = el("thead");
        thead.append(row(block.head, "th"));
        table.append(thead);
        if (block.rows.length) {
          const tbody = el("tbody");
          for (const cells of block.rows) tbody.append(row(cells, "td"));
          table.append(tbody);
        }
        wrap.append(table);
        return wrap;
      }
      default:
        return el("p", "", "");
    }
  }

  // ---------------------------------------------------------------- entry points

  function toLines(text) {
    return String(text ?? "").replace(/\r\n?/g, "\n").replace(/\0/g, "\uFFFD").split("\n");
  }

  // The top-level blocks, each with `key`: its type and source lines (equal keys render equally).
  function parse(text) {
    const lines = toLines(text);
    return parseBlocks(lines, 0).map((block) => ({ ...block, key: block.type + "\n" + lines.slice(block.from, block.to).join("\n") }));
  }

  function render(text) {
    const fragment = document.createDocumentFragment();
    for (const block of parse(text)) fragment.append(renderBlock(block));
    return fragment;
  }

  function toHTML(text) {
    const box = document.createElement("div");
    box.append(render(text));
    return box.innerHTML;
  }

  // Re-render `node` for `text`, keeping the DOM of the blocks that did not change.
  function renderInto(node, text) {
    const blocks = parse(text);
    const old = [...node.children];
    if (old.length !== node.childNodes.length || old.some((child) => child.mdKey === undefined)) {
      node.replaceChildren(); // not ours (plain text): start over
      old.length = 0;
    }
    blocks.forEach((block, k) => {
      const current = old[k];
      if (current && current.mdKey === block.key) return;
      if (current && block.type === "code" && current.classList.contains("md-code") && current.mdLang === block.lang) {
        updateCode(current, block); // a code block growing as it streams: only its text changes
      } else {
        const fresh = renderBlock(block);
        fresh.mdLang = block.lang;
        if (current) current.replaceWith(fresh);
        else node.append(fresh);
        old[k] = fresh;
      }
      old[k].mdKey = block.key;
    });
    for (const extra of old.slice(blocks.length)) extra.remove();
  }

  async function copyCode(button) {
    const text = button.closest(".md-code").querySelector("pre > code").textContent;
    try {
      await navigator.clipboard.writeText(text);
    } catch (_) { // no clipboard API (not a secure context): copy the selection
      const area = el("textarea");
      area.value = text;
      document.body.append(area);
      area.select();
      document.execCommand("copy");
      area.remove();
    }
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = "Copy"; }, 1500);
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest && event.target.closest(".md-copy");
    if (button) copyCode(button).catch(() => { button.textContent = "Copy failed"; });
  });

  window.kimiMarkdown = Object.freeze({ render, renderInto, toHTML, parse, parseInline, safeUrl });
})();
