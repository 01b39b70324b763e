"""What the agent may do unasked, and what an approval covers.

One place decides, for every tool that reads, writes, runs or reaches the network
(docs/security.md has the user's view):

- `sensitive.py`: files that hold credentials (the agent's own included). Never returned without
  the user approving that one file; never covered by "approve for this session", a rule or yolo;
  refused under `--afk`. Decided on the path as typed and on where it really leads.
- `protected.py`: paths whose change means lasting code execution or lost access (the share dir,
  shell start-up files, `~/.ssh`, `.git/hooks`, `.git/config`): writes always ask, with a warning.
- `scope.py`: what "approve for this session" covers: a command prefix, a directory, a host, a
  tool; what the card showed and nothing more.
- `paths.py`: a path as typed and where it really leads, so a symbolic link cannot get around
  a decision.
- `shell_parse.py`: a Shell command line as bash will run it (tree-sitter-bash), read fail-closed:
  its simple commands, or "complex" (anything it does not understand asks every time).
- `shell_expand.py`: the words a shell word becomes, as bash would expand it, or "unknown".
- `command_table.py` (data) and `command_forms.py`: the forms of commands the agent understands
  (read-only, remembered by prefix) and the programs that run other programs.
- `command_keys.py`: what approving one simple command for the session remembers (its form's
  prefix, the exact command, or nothing for commands that run whatever their arguments say).
- `command_paths.py`: the files a shell command names, so a command naming a credentials file
  or a protected path asks as ReadFile or WriteFile would.
- `read_only.py`: whether a line provably only reads (then it runs unasked, unless the user
  chose "always ask"); `git_config.py`: the repository's own git config switched off for it.
- `command_judgement.py`: one Shell line judged once; every decision above reads that parse.
- `rules.py`: the user's `[permissions]` (allow / ask / deny) in their config.toml.
- `redaction.py`: every secret the process knows (util/secrets.py) out of tool results and
  approval cards.

`core/approvals.py` applies them in this order: a deny rule refuses; a warning (sensitive or
protected) asks, or refuses under `--afk`; an ask rule asks; an allow rule, a command that only
reads (unless "always ask"), yolo, afk or a session approval lets it run; anything else asks.
"""
