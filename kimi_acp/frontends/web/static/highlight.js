// kimi web: syntax colours for code blocks, small and offline. One linear pass per block marks
// comments, strings, numbers and keywords of the common languages; everything else stays text.
// It only wraps text in spans (textContent is unchanged, so Copy and the Markdown renderer's
// incremental updates see the same text).
"use strict";

(function () {
  const words = (s) => new Set(s.split(" "));
  const C_LIKE = "if else for while do switch case default break continue return goto sizeof typedef struct union enum const static extern void int char long short float double unsigned signed";
  const LANGS = {
    python: { line: "#", block: null, kw: words("False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case self") },
    js: { line: "//", block: ["/*", "*/"], tpl: true, kw: words("async await break case catch class const continue debugger default delete do else export extends false finally for from function if import in instanceof let new null of return static super switch this throw true try typeof undefined var void while yield interface type enum implements readonly") },
    sh: { line: "#", block: null, kw: words("if then else elif fi for while until do done case esac in function return exit export local readonly set unset echo cd") },
    rust: { line: "//", block: ["/*", "*/"], kw: words("as async await break const continue crate dyn else enum extern false fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait true type unsafe use where while Some None Ok Err") },
    go: { line: "//", block: ["/*", "*/"], kw: words("break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var nil true false") },
    c: { line: "//", block: ["/*", "*/"], kw: words(C_LIKE + " class public private protected virtual template typename namespace using new delete true false nullptr include define") },
    java: { line: "//", block: ["/*", "*/"], kw: words("abstract boolean break byte case catch char class const continue default do double else enum extends final finally float for if implements import instanceof int interface long new null package private protected public return short static super switch this throw throws try void while true false var val fun when object") },
    json: { line: null, block: null, kw: words("true false null") },
    sql: { line: "--", block: ["/*", "*/"], caseless: true, kw: words("select from where insert into values update set delete create table drop alter join left right inner outer on group by order having limit and or not null as distinct union") },
  };
  const ALIASES = {
    py: "python", python3: "python", javascript: "js", ts: "js", typescript: "js", jsx: "js", tsx: "js", mjs: "js",
    bash: "sh", shell: "sh", zsh: "sh", console: "sh", rs: "rust", golang: "go", cpp: "c", "c++": "c", h: "c", hpp: "c",
    cs: "java", csharp: "java", kotlin: "java", kt: "java", scala: "java", swift: "java",
  };
  const MAX_CHARS = 100_000; // a bigger block stays plain: colours are a nicety

  function langOf(name) {
    const key = String(name || "").toLowerCase();
    return LANGS[key] || LANGS[ALIASES[key]] || null;
  }

  function tokens(text, lang) {
    const out = []; // [class or "", text]
    let plainStart = 0;
    let i = 0;
    const n = text.length;
    const push = (cls, end) => {
      if (i > plainStart) out.push(["", text.slice(plainStart, i)]);
      out.push([cls, text.slice(i, end)]);
      i = plainStart = end;
    };
    while (i < n) {
      const ch = text[i];
      if (lang.line && text.startsWith(lang.line, i)) {
        const end = text.indexOf("\n", i);
        push("hl-com", end < 0 ? n : end);
      } else if (lang.block && text.startsWith(lang.block[0], i)) {
        const end = text.indexOf(lang.block[1], i + lang.block[0].length);
        push("hl-com", end < 0 ? n : end + lang.block[1].length);
      } else if (ch === '"' || ch === "'" || (ch === "`" && lang.tpl)) {
        let j = i + 1;
        while (j < n && text[j] !== ch && !(text[j] === "\n" && ch !== "`")) j += text[j] === "\\" ? 2 : 1;
        push("hl-str", Math.min(n, j + 1));
      } else if (/[0-9]/.test(ch) && !/[A-Za-z0-9_$]/.test(text[i - 1] || "")) {
        let j = i + 1;
        while (j < n && /[0-9A-Za-z_.]/.test(text[j])) j++;
        push("hl-num", j);
      } else if (/[A-Za-z_$]/.test(ch) && !/[A-Za-z0-9_$]/.test(text[i - 1] || "")) {
        let j = i + 1;
        while (j < n && /[A-Za-z0-9_$]/.test(text[j])) j++;
        const word = text.slice(i, j);
        if (lang.kw.has(lang.caseless ? word.toLowerCase() : word)) push("hl-kw", j);
        else i = j;
      } else {
        i++;
      }
    }
    if (n > plainStart) out.push(["", text.slice(plainStart)]);
    return out;
  }

  // Colour a `code` element once its block is complete (its language from `language-<lang>`).
  function highlight(code) {
    const match = /(?:^|\s)language-(\S+)/.exec(code.className);
    const lang = match && langOf(match[1]);
    const text = code.textContent;
    if (!lang || text.length > MAX_CHARS || code.dataset.hl === text.length + "") return;
    const fragment = document.createDocumentFragment();
    for (const [cls, part] of tokens(text, lang)) {
      if (!cls) fragment.append(part);
      else {
        const span = document.createElement("span");
        span.className = cls;
        span.textContent = part;
        fragment.append(span);
      }
    }
    code.replaceChildren(fragment);
    code.dataset.hl = text.length + "";
  }

  window.kimiHighlight = Object.freeze({ highlight, tokens, langOf });
})();
