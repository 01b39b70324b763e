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
- `shell_words.py`: a shell command split into the simple commands a scope or rule must cover.
- `command_keys.py`: what approving one simple command for the session remembers (its prefix,
  the exact command, or nothing for commands that run whatever their arguments say).
- `command_paths.py`: the files a shell command names, so a command naming a credentials file
  or a protected path asks as ReadFile or WriteFile would.
- `rules.py`: the user's `[permissions]` (allow / ask / deny) in their config.toml.
- `redaction.py`: every secret the process knows (util/secrets.py) out of tool results and
  approval cards.

`core/approvals.py` applies them in this order: a deny rule refuses; a warning (sensitive or
protected) asks, or refuses under `--afk`; an ask rule asks; an allow rule, yolo, afk or a
session approval lets it run; anything else asks.
"""
