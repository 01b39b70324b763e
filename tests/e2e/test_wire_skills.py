"""Skills, flows, agent files, workspace dirs and the slash commands, through `kimi --wire` (served in
this process; what reaches stderr and the start-up errors from a real process)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kimi_acp.core.slash_commands import code_spans
from kimi_acp.sessions import work_dir_key
from tests.support.wire_client import event_types, events, scripted_config_data, text_of, tool_call

SKILL = "---\nname: review\ndescription: Review the code for bugs\n---\nReview the code carefully. SKILL-BODY-7f3a\n"
FLOW = """---
name: release
description: Plan, check, ship
type: flow
---
```mermaid
flowchart TD
A([BEGIN]) --> B[Write the plan]
B --> C{Is the plan good?}
C -->|yes| D[Ship it]
C -->|no| B
D --> E([END])
```
"""

# The same chart in D2, as Kimi Code CLI reads it: labels, a |md label, a property, a style block.
FLOW_D2 = """---
name: release
description: Plan, check, ship
type: flow
---
```d2
direction: down
start: BEGIN
plan: |md
  Write the plan
|
check: "Is the plan good?"
check.shape: diamond
ship: Ship it {style.fill: "#dfd"}
done: END
start -> plan -> check
check -> ship: yes
check -> plan: no  # once more
ship -> done
```
"""


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """A HOME without skills, so ~/.claude/skills of whoever runs the tests is not seen."""
    directory = tmp_path / "home"
    directory.mkdir()
    return {"HOME": str(directory)}


def add_skill(root: Path, directory: str, text: str) -> Path:
    path = root / directory / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def session_dir(share_dir: Path, work_dir: Path) -> Path:
    (directory,) = list((share_dir / "sessions" / work_dir_key(work_dir)).iterdir())
    return directory


def context_lines(share_dir: Path, work_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (session_dir(share_dir, work_dir) / "context.jsonl").read_text().splitlines()]


def user_texts(lines: list[dict[str, Any]]) -> list[str]:
    out = []
    for line in lines:
        if line.get("role") == "user":
            content = line["content"]
            out.append(content if isinstance(content, str) else "".join(p.get("text", "") for p in content))
    return out


def state(share_dir: Path, work_dir: Path) -> dict[str, Any]:
    return json.loads((session_dir(share_dir, work_dir) / "state.json").read_text())


def tool_results(seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return values in the order of the calls (results arrive in the order tools finish)."""
    order = [e["payload"]["id"] for e in events(seen, "ToolCall")]
    by_id = {e["payload"]["tool_call_id"]: e["payload"]["return_value"] for e in events(seen, "ToolResult")}
    return [by_id[i] for i in order]


# --------------------------------------------------------------------------- skills


async def test_a_skill_is_listed_injected_and_told_to_the_model(start_wire, share_dir, work_dir, home):
    add_skill(work_dir / ".kimi" / "skills", "review", SKILL)
    wire = await start_wire(["text: reviewed"], env=home)
    init, _ = await wire.call("initialize", {"protocol_version": "1.10"})
    listed = {c["name"]: c["description"] for c in init["result"]["slash_commands"]}
    assert listed["skill:review"] == "Review the code for bugs"
    response, seen = await wire.call("prompt", {"user_input": "/skill:review check a.py"})
    assert response["result"] == {"status": "finished"}
    assert events(seen, "TurnBegin")[0]["payload"]["user_input"] == "/skill:review check a.py"  # what was typed
    lines = context_lines(share_dir, work_dir)
    assert user_texts(lines) == [SKILL.strip() + "\n\nUser request:\ncheck a.py"]  # what the model got
    assert "- review: Review the code for bugs (" in lines[0]["content"]  # the system prompt lists it


async def test_skills_dir_flag_and_extra_skill_dirs(start_wire, tmp_path, work_dir, home):
    add_skill(work_dir / ".kimi" / "skills", "review", SKILL)  # replaced by --skills-dir
    add_skill(tmp_path / "mine", "deploy", "---\ndescription: Deploy it\n---\nDeploy.\n")
    config = tmp_path / "cfg.json"
    from tests.support.wire_client import scripted_config_data

    data = scripted_config_data(tmp_path, [])
    data["extra_skill_dirs"] = [str(tmp_path / "extra")]  # read by the early answer too
    add_skill(tmp_path / "extra", "extra", "---\ndescription: From extra\n---\nX\n")
    config.write_text(json.dumps(data))
    wire = await start_wire((), "--skills-dir", str(tmp_path / "mine"), config=config, env=home)
    init, _ = await wire.call("initialize", {"protocol_version": "1.10"})
    names = [c["name"] for c in init["result"]["slash_commands"]]
    skills = [n for n in names if n.startswith("skill:")]  # sorted by name; the bundled ones stay
    assert skills == ["skill:deploy", "skill:extra", "skill:kimi-cli-help", "skill:skill-creator"]


async def test_a_broken_skill_is_reported_by_path_and_skipped(start_wire_process, work_dir, home):
    root = work_dir / ".kimi" / "skills"
    add_skill(root, "review", SKILL)
    broken = add_skill(root, "broken", "---\nname: [oops\n---\nbody\n")
    wire = await start_wire_process([], env=home)  # what reaches stderr: a process
    init, _ = await wire.call("initialize", {"protocol_version": "1.10"})
    names = {c["name"] for c in init["result"]["slash_commands"]}
    assert "skill:review" in names and not any("broken" in n for n in names)
    _, seen = await wire.call("prompt", {"user_input": "/help"})
    assert f"Not loaded:\n- {broken}: invalid YAML front matter" in text_of(seen)
    _, seen = await wire.call("prompt", {"user_input": "/skill:broken"})
    assert text_of(seen).startswith('Unknown slash command "/skill:broken". The skill `broken` was not loaded: ' + str(broken))
    assert "StepBegin" not in event_types(seen)
    assert await wire.close() == 0  # stderr is read to its end (a running process's would wait 5 s and say "")
    assert "skill skipped" not in await wire.stderr_text()  # logged to the log file, not to stderr


async def test_skills_added_between_turns_are_listed_usable_and_told(start_wire, share_dir, work_dir, home):
    wire = await start_wire(["text: one", "text: two", "text: three"], env=home)
    init, _ = await wire.call("initialize", {"protocol_version": "1.10"})
    bundled = {"skill:kimi-cli-help", "skill:skill-creator"}
    assert {c["name"] for c in init["result"]["slash_commands"] if c["name"].startswith("skill:")} == bundled
    await wire.call("prompt", {"user_input": "hello"})
    add_skill(work_dir / ".kimi" / "skills", "review", SKILL)
    init, _ = await wire.call("initialize", {"protocol_version": "1.10"})
    assert "skill:review" in {c["name"] for c in init["result"]["slash_commands"]}
    await wire.call("prompt", {"user_input": "again"})
    await wire.call("prompt", {"user_input": "/skill:review"})
    users = user_texts(context_lines(share_dir, work_dir))
    assert users[0] == "hello"
    assert "The available skills have changed." in users[1] and "- review: Review the code for bugs" in users[1]
    assert users[2:] == ["again", SKILL.strip()]


# --------------------------------------------------------------------------- flows


@pytest.mark.parametrize("skill", [FLOW, FLOW_D2], ids=["mermaid", "d2"])
async def test_a_flow_walks_its_chart_following_the_models_choice(start_wire, share_dir, work_dir, home, skill):
    add_skill(work_dir / ".kimi" / "skills", "release", skill)
    replies = ["text: planned", "text: <choice>no</choice>", "text: planned again", "text: not sure",
               "text: fine <choice>yes</choice>", "text: shipped"]  # fmt: skip
    wire = await start_wire(replies, env=home)
    init, _ = await wire.call("initialize", {"protocol_version": "1.10"})
    assert {"skill:release", "flow:release"} <= {c["name"] for c in init["result"]["slash_commands"]}
    response, seen = await wire.call("prompt", {"user_input": "/flow:release"})
    assert response["result"] == {"status": "finished"}
    begins = [e["payload"]["user_input"] for e in events(seen, "TurnBegin")]
    assert begins[0] == "/flow:release"
    assert [b.splitlines()[0] for b in begins[1:]] == [
        "Write the plan", "Is the plan good?", "Write the plan", "Is the plan good?", "Is the plan good?", "Ship it",
    ]  # fmt: skip
    assert "- yes\n- no" in begins[2] and "did not include a valid choice" in begins[5]
    assert event_types(seen).count("TurnEnd") == 7  # one per node, and the command's own
    assert event_types(seen)[-1] == "TurnEnd"
    users = user_texts(context_lines(share_dir, work_dir))
    assert users == begins[1:]  # each node's prompt reached the model, on the session's context


# --------------------------------------------------------------------------- agent files


async def test_an_agent_file_excludes_a_tool_and_sets_the_prompt(start_wire, tmp_path, share_dir, work_dir, home):
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "system.md").write_text("You are the reviewer of ${KIMI_WORK_DIR}. ${ROLE}")
    agent = tmp_path / "agent" / "agent.yaml"
    agent.write_text(
        "version: 1\nagent:\n  extend: default\n  name: reviewer\n  system_prompt_path: ./system.md\n"
        "  system_prompt_args: {ROLE: Never edit.}\n  exclude_tools: [kimi_cli.tools.shell:Shell]\n"
    )
    scripts = [tool_call("s1", "Shell", {"command": "echo hi"}) + "\n" + tool_call("r1", "ReadFile", {"path": "a.txt"}), "text: ok"]
    (work_dir / "a.txt").write_text("alpha\n")
    wire = await start_wire(scripts, "--agent-file", str(agent), "--yolo", env=home)
    response, seen = await wire.call("prompt", {"user_input": "go"})
    assert response["result"] == {"status": "finished"}
    shell, read = tool_results(seen)
    assert shell["is_error"] and shell["message"] == "Tool `Shell` not found"
    assert not read["is_error"] and "alpha" in read["output"]
    assert context_lines(share_dir, work_dir)[0]["content"] == f"You are the reviewer of {work_dir}. Never edit."


async def test_a_bad_agent_file_is_a_startup_error(start_wire_process, tmp_path, home):
    agent = tmp_path / "agent.yaml"
    agent.write_text("agent:\n  extend: default\n  tools: [nowhere:Teleport]\n")
    wire = await start_wire_process([], "--agent-file", str(agent), env=home)
    assert await wire.proc.wait() == 2
    assert "unknown tool 'Teleport'" in await wire.stderr_text()


async def test_the_configs_agent_file_applies_and_agent_file_overrides_it(start_wire, tmp_path, share_dir, work_dir, home):
    """`agent_file` in the config (relative to its folder) is the session's agent; `--agent-file` wins."""
    directory = tmp_path / "conf"
    directory.mkdir()
    (directory / "system.md").write_text("From the config's agent file, in ${KIMI_WORK_DIR}.")
    (directory / "reviewer.yaml").write_text(
        "agent:\n  extend: default\n  system_prompt_path: ./system.md\n  exclude_tools: [kimi_cli.tools.shell:Shell]\n"
    )
    scripts = [tool_call("s1", "Shell", {"command": "echo hi"}), "text: ok"]
    data = scripted_config_data(directory, scripts)
    config = directory / "config.json"
    config.write_text(json.dumps({**data, "agent_file": "reviewer.yaml"}))
    wire = await start_wire(config=config, env=home)
    response, seen = await wire.call("prompt", {"user_input": "go"})
    assert response["result"] == {"status": "finished"}
    (shell,) = tool_results(seen)
    assert shell["is_error"] and shell["message"] == "Tool `Shell` not found"
    assert context_lines(share_dir, work_dir)[0]["content"] == f"From the config's agent file, in {work_dir}."
    await wire.close()

    flag = tmp_path / "flag.yaml"
    flag.write_text("agent:\n  extend: default\n  exclude_tools: [kimi_cli.tools.file:ReadFile]\n")
    (directory / "reviewer.yaml").write_text("agent:\n  extend: default\n  tools: [nowhere:Teleport]\n")  # unused
    data = scripted_config_data(directory, [tool_call("s1", "Shell", {"command": "echo from-shell"}), "text: ok"])
    config.write_text(json.dumps({**data, "agent_file": "reviewer.yaml"}))
    wire = await start_wire([], "--agent-file", str(flag), "--yolo", config=config, env=home)
    response, seen = await wire.call("prompt", {"user_input": "go"})
    assert response["result"] == {"status": "finished"}
    (shell,) = tool_results(seen)
    assert not shell["is_error"] and "from-shell" in shell["output"]


async def test_a_bad_agent_file_in_the_config_is_a_startup_error(start_wire_process, tmp_path, share_dir, work_dir, home):
    directory = tmp_path / "conf"
    directory.mkdir()
    (directory / "agent.yaml").write_text("agent:\n  extend: default\n  tools: [nowhere:Teleport]\n")
    config = directory / "config.json"
    config.write_text(json.dumps({**scripted_config_data(directory, []), "agent_file": "agent.yaml"}))
    wire = await start_wire_process(config=config, env=home)
    assert await wire.proc.wait() == 2
    stderr = await wire.stderr_text()
    assert "agent_file: " in stderr and "unknown tool 'Teleport'" in stderr
    assert not (share_dir / "sessions" / work_dir_key(work_dir)).exists()  # no empty session left behind


# --------------------------------------------------------------------------- workspace


async def test_add_dir_lets_readfile_and_glob_reach_the_extra_dir(start_wire, tmp_path, work_dir, home):
    extra = tmp_path / "extra"
    (extra / "docs").mkdir(parents=True)
    (extra / "docs" / "notes.txt").write_text("extra notes\n")
    calls = tool_call("g1", "Glob", {"pattern": "docs/*.txt", "directory": str(extra)}) + "\n" + tool_call(
        "r1", "ReadFile", {"path": "../extra/docs/notes.txt"}
    )
    (work_dir / "tmp").mkdir()  # the system temp dir is read unasked: tmp_path must not be in it
    without = await start_wire([calls, "text: done"], env={**home, "TMPDIR": str(work_dir / "tmp")})
    prompt = await without.request("prompt", {"user_input": "look"})
    request, before = await without.next_request()  # Glob outside the workspace asks
    payload = request["params"]["payload"]
    assert payload["sender"] == "Glob" and payload["session_scope"] == f"reads in `{extra}`"
    await without.respond(request["id"], {"request_id": payload["id"], "response": "reject", "feedback": "no"})
    _, seen = await without.response(prompt)
    glob, read = tool_results(before + seen)
    assert glob["is_error"] and "rejected" in glob["message"]
    assert read["is_error"] and "outside the working directory" in read["message"]
    await without.close()

    wire = await start_wire([calls, "text: done"], "--add-dir", str(extra), env=home)
    _, seen = await wire.call("prompt", {"user_input": "look"})
    glob, read = tool_results(seen)
    assert not glob["is_error"] and glob["output"] == "docs/notes.txt"
    assert not read["is_error"] and "extra notes" in read["output"]
    _, seen = await wire.call("prompt", {"user_input": "/add-dir"})
    assert str(extra) in text_of(seen)


async def test_add_dir_command_persists_lists_and_opens_the_dir(start_wire, tmp_path, share_dir, work_dir, home):
    extra = tmp_path / "lib"
    extra.mkdir()
    (extra / "util.py").write_text("def f(): pass\n")
    scripts = [tool_call("g1", "Glob", {"pattern": "*.py", "directory": str(extra)}), "text: found"]
    wire = await start_wire(scripts, env=home)
    _, seen = await wire.call("prompt", {"user_input": "/add-dir"})
    assert text_of(seen) == "No additional directories. Usage: /add-dir <path>"
    _, seen = await wire.call("prompt", {"user_input": f"/add-dir {extra}"})
    assert text_of(seen) == f"Added directory to workspace: {extra}"
    assert state(share_dir, work_dir)["additional_dirs"] == [str(extra)]
    _, seen = await wire.call("prompt", {"user_input": "/add-dir ../lib"})
    assert text_of(seen) == f"Directory is already in the workspace: {extra}"
    _, seen = await wire.call("prompt", {"user_input": f"/add-dir {work_dir}"})
    assert "already within the working directory" in text_of(seen)
    _, seen = await wire.call("prompt", {"user_input": "/add-dir /no/such/dir"})
    assert text_of(seen) == "Directory does not exist: /no/such/dir"
    _, seen = await wire.call("prompt", {"user_input": "/add-dir"})
    assert text_of(seen) == f"Additional directories:\n  - {extra}"
    _, seen = await wire.call("prompt", {"user_input": "search"})
    assert tool_results(seen)[0]["output"] == "util.py"
    assert any(f"added a directory to the workspace: `{extra}`" in u for u in user_texts(context_lines(share_dir, work_dir)))


# --------------------------------------------------------------------------- slash commands


async def test_help_initialize_and_the_registry_agree(start_wire, work_dir, home):
    add_skill(work_dir / ".kimi" / "skills", "review", SKILL)
    wire = await start_wire([], env=home)
    init, _ = await wire.call("initialize", {"protocol_version": "1.10"})
    commands = init["result"]["slash_commands"]
    _, seen = await wire.call("prompt", {"user_input": "/help"})
    help_lines = [line for line in text_of(seen).splitlines() if line.startswith("- `/")]
    assert [line[4:].split("`", 1)[0] for line in help_lines] == [c["name"] for c in commands]
    for command, line in zip(commands, help_lines):
        assert line.endswith(code_spans(command["description"]))  # arguments in backticks for Markdown
    for command in commands:  # every advertised command runs (none is "Unknown")
        if command["name"] in ("init", "compact", "skill:review"):
            continue  # these call the model
        _, seen = await wire.call("prompt", {"user_input": f"/{command['name']}"})
        assert "Unknown slash command" not in text_of(seen), command


async def test_afk_approves_actions_and_dismisses_questions(start_wire, share_dir, work_dir, home):
    question = {"questions": [{"question": "Which?", "header": "Pick", "options": [{"label": "A", "description": "a"}, {"label": "B", "description": "b"}]}]}
    scripts = [tool_call("s1", "Shell", {"command": "echo ran"}) + "\n" + tool_call("q1", "AskUserQuestion", question), "text: done"]
    wire = await start_wire(scripts, env=home)
    await wire.call("initialize", {"protocol_version": "1.10", "capabilities": {"supports_question": True}})
    _, seen = await wire.call("prompt", {"user_input": "/afk"})
    assert text_of(seen).startswith("afk mode is on")
    assert state(share_dir, work_dir)["approval"]["afk"] is True
    response, seen = await wire.call("prompt", {"user_input": "run"})
    assert response["result"] == {"status": "finished"}
    assert not [m for m in seen if m.get("method") == "request"]  # nobody was asked anything
    shell, asked = tool_results(seen)
    assert not shell["is_error"] and "ran" in shell["output"]
    assert "dismissed" in json.dumps(asked).lower()
    _, seen = await wire.call("prompt", {"user_input": "/afk"})
    assert text_of(seen).startswith("afk mode is off") and state(share_dir, work_dir)["approval"]["afk"] is False


async def test_afk_and_plan_flags(start_wire, share_dir, work_dir, home):
    wire = await start_wire([tool_call("s1", "Shell", {"command": "echo ran"}), "text: done"], "--afk", "--plan", env=home)
    _, seen = await wire.call("prompt", {"user_input": "run"})
    assert not [m for m in seen if m.get("method") == "request"]
    assert events(seen, "StatusUpdate")[-1]["payload"]["plan_mode"] is True
    assert state(share_dir, work_dir)["approval"].get("afk") is False  # --afk is for this process only
    assert state(share_dir, work_dir)["plan_mode"] is True


async def test_max_retries_per_step_flag(start_wire, home):
    wire = await start_wire(["error: 500 boom", "error: 500 boom", "text: late"], "--max-retries-per-step", "2", env=home)
    response, seen = await wire.call("prompt", {"user_input": "hi"})
    assert "error" in response and len(events(seen, "StepRetry")) == 1


async def test_plan_on_view_clear_off(start_wire, share_dir, work_dir, home):
    wire = await start_wire([], env=home)
    _, seen = await wire.call("prompt", {"user_input": "/plan on"})
    text = text_of(seen)
    assert text.startswith("Plan mode is on") and "Plan file: " in text
    plan_file = Path(text.split("Plan file: ")[1].strip())
    assert state(share_dir, work_dir)["plan_mode"] is True
    _, seen = await wire.call("prompt", {"user_input": "/plan view"})
    assert text_of(seen) == "No plan file found for this session."
    plan_file.write_text("1. do it\n")
    _, seen = await wire.call("prompt", {"user_input": "/plan view"})
    assert text_of(seen) == "1. do it\n"
    _, seen = await wire.call("prompt", {"user_input": "/plan clear"})
    assert text_of(seen) == "Plan cleared." and not plan_file.exists()
    _, seen = await wire.call("prompt", {"user_input": "/plan sideways"})
    assert text_of(seen) == "Usage: /plan [on|off|view|clear]"
    _, seen = await wire.call("prompt", {"user_input": "/plan off"})
    assert text_of(seen).startswith("Plan mode is off") and state(share_dir, work_dir)["plan_mode"] is False


async def test_compact_on_a_short_context_still_reports(start_wire, home):
    wire = await start_wire(["text: short answer"], env=home)
    _, seen = await wire.call("prompt", {"user_input": "/compact"})
    assert text_of(seen) == "The context is empty."
    await wire.call("prompt", {"user_input": "hi"})
    response, seen = await wire.call("prompt", {"user_input": "/compact"})
    assert response["result"] == {"status": "finished"}
    assert text_of(seen).startswith("The context has been compacted.")
    assert "StepBegin" not in event_types(seen) and "StatusUpdate" in event_types(seen)


async def test_export_writes_the_session_as_markdown(start_wire, work_dir, home):
    wire = await start_wire([tool_call("r1", "Glob", {"pattern": "*"}) + "\ntext: Looking.", "text: Nothing here."], env=home)
    _, seen = await wire.call("prompt", {"user_input": "/export"})
    assert text_of(seen) == "No messages to export."
    await wire.call("prompt", {"user_input": "what is in here?"})
    _, seen, asked = await wire.call_approving("prompt", {"user_input": "/export out/session.md"})
    exported = work_dir / "out" / "session.md"
    # an edit in the workspace, asked about as WriteFile's would be
    assert [(a["sender"], a["action"], a["description"]) for a in asked] == [
        ("/export", "edit file", f"Export this session (4 messages) to `{exported}`")
    ]
    assert text_of(seen).startswith(f"Exported 4 messages to {exported}")
    text = exported.read_text()
    assert "# Kimi Session Export" in text and "### User\n\nwhat is in here?" in text
    assert "#### Tool Call: Glob (`*`)" in text and "Nothing here." in text
    assert exported.stat().st_mode & 0o777 == 0o600  # a transcript may hold secrets
    _, seen, asked = await wire.call_approving("prompt", {"user_input": "/export"})
    assert len(asked) == 1 and len(list(work_dir.glob("kimi-export-*.md"))) == 1


async def test_import_a_file_and_another_session(start_wire, tmp_path, share_dir, work_dir, home):
    notes = work_dir / "notes.md"
    notes.write_text("We decided on PostgreSQL.\n")
    first = await start_wire(["text: the answer is 42"], env=home)
    await first.call("prompt", {"user_input": "what is the answer?"})
    await first.close()
    (other_id,) = [d.name for d in (share_dir / "sessions" / work_dir_key(work_dir)).iterdir()]

    wire = await start_wire([], "--session", "second-session", env=home)
    _, seen = await wire.call("prompt", {"user_input": "/import"})
    assert text_of(seen) == "Usage: /import <file path or session id>"
    _, seen = await wire.call("prompt", {"user_input": "/import notes.md"})
    assert text_of(seen) == "Imported context from file 'notes.md' (26 chars)."
    _, seen = await wire.call("prompt", {"user_input": f"/import {other_id}"})
    assert text_of(seen).startswith(f"Imported context from session '{other_id}'")
    _, seen = await wire.call("prompt", {"user_input": "/import nothing-like-this"})
    assert text_of(seen) == "'nothing-like-this' is neither a file nor a session id."
    context = (share_dir / "sessions" / work_dir_key(work_dir) / "second-session" / "context.jsonl").read_text()
    assert "We decided on PostgreSQL." in context and '<imported_context source=\\"file' in context
    assert "[USER]\\nwhat is the answer?" in context and "the answer is 42" in context


async def test_init_expands_into_a_prompt(start_wire, share_dir, work_dir, home):
    wire = await start_wire(["text: written"], env=home)
    response, seen = await wire.call("prompt", {"user_input": "/init"})
    assert response["result"] == {"status": "finished"} and text_of(seen) == "written"
    assert user_texts(context_lines(share_dir, work_dir))[0].startswith("Analyze this codebase")
