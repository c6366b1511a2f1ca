"""The CLIs ``support.clis_record`` records, each in every version it has been seen in: how it is
run against the scripted model (the same settings and environment the real-CLI tests give the
pinned version, tests/support/clis_*.py) and how it spells each step with the tools a version
declares. Where versions differ (a tool renamed, a parameter added) the spelling asks the
request's own declarations, so a new version needs no change here unless it drops a capability.
"""

from __future__ import annotations

import json
import os
from typing import Any

from support.cli_runs import PROXIES
from support.clis import node22
from support.clis_claude import clean_env as claude_env
from support.clis_codex import clean_env as codex_env
from support.clis_codex import config_toml
from support.clis_copilot import copilot_env
from support.clis_gemini import GEMINI_SETTINGS, tool_env
from support.clis_qwen import QWEN_SETTINGS
from support.clis_record import PROMPT, Call, Client, Launch, Seen, Step

# -- Claude Code (Anthropic Messages) ------------------------------------------------------------


def claude_launch(at: Launch) -> tuple[list[str], dict[str, str]]:
    (at.home / ".claude").mkdir(parents=True, exist_ok=True)
    command = [str(at.exe), "-p", PROMPT, "--dangerously-skip-permissions", "--output-format", "text"]
    return command, claude_env(at.home, at.url)


def claude_spell(step: Step, seen: Seen) -> Call | None:
    narrate = {"description": f"Step {seen.index + 1}: {step.label or step.kind}"}
    if step.kind == "shell":
        return ("Bash", {"command": step.command, **narrate})
    if step.kind == "read":
        window = {"offset": step.first, "limit": step.count} if step.count else {}
        return ("Read", {"file_path": seen.path(step.path), **window})
    if step.kind == "edit":
        return ("Edit", {"file_path": seen.path(step.path), "old_string": step.old, "new_string": step.new})
    if step.kind == "bg_start":
        return ("Bash", {"command": step.command, "run_in_background": True, **narrate})
    job = seen.found(r"with ID: (\w+)")
    if step.kind == "bg_poll" and job:
        if seen.has("BashOutput"):
            return ("BashOutput", {"bash_id": job})
        if seen.has("TaskOutput"):
            return ("TaskOutput", {"task_id": job, "block": False, "timeout": 1000})
        output = seen.found(r"Output is being written to: (\S+?\.output)")
        return ("Read", {"file_path": output}) if output else None
    return None


CLAUDE_CODE = Client(
    "claude_code",
    "@anthropic-ai/claude-code",
    "claude",
    "anthropic",
    claude_launch,
    claude_spell,
    lambda body: "Bash" in {t.get("name") for t in body.get("tools") or []},
    model="claude-sonnet-4-5",
)


# -- Codex CLI (Responses) -----------------------------------------------------------------------


def codex_launch(at: Launch) -> tuple[list[str], dict[str, str]]:
    codex_home = at.home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    config = config_toml(at.url).replace('model = "gpt-5.5"', f'model = "{at.model}"', 1)
    (codex_home / "config.toml").write_text(config)
    command = [str(at.exe), "exec", "--skip-git-repo-check", "--color", "never", "-C", str(at.work), PROMPT]
    return command, codex_env(at.home, codex_home)


PATCH = "*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch\n"


def codex_spell(step: Step, seen: Seen) -> Call | None:
    """Codex has no read tool: a read is its shell command."""
    if step.kind in ("shell", "read"):
        return codex_shell(step.command, seen)
    if step.kind == "edit":
        patch = PATCH.format(path=step.path, old=step.old, new=step.new)
        if seen.has("apply_patch"):
            freeform = (seen.tools["apply_patch"] or {}).get("freeform")
            return ("apply_patch", patch if freeform else {"input": patch})
        # Without the tool the model runs `apply_patch` as a command, which Codex intercepts.
        if seen.has("shell"):
            return ("shell", {"command": ["apply_patch", patch]})
        return codex_shell(f"apply_patch <<'EOF'\n{patch}EOF", seen)
    if step.kind == "bg_start" and seen.has("exec_command"):
        return ("exec_command", {"cmd": step.command, "yield_time_ms": 500})
    session = seen.found(r"session ID (\d+)")
    if step.kind == "bg_poll" and session and seen.has("write_stdin"):
        return ("write_stdin", {"session_id": int(session), "chars": "", "yield_time_ms": 1000})
    return None


def codex_shell(line: str, seen: Seen) -> Call | None:
    """A command line in whichever shell tool the version declares: ``exec_command`` (``cmd``),
    ``shell_command`` (a command line) or ``shell`` (an argv list, run through ``bash -lc``)."""
    if seen.has("exec_command"):
        return ("exec_command", {"cmd": line})
    if seen.has("shell_command"):
        return ("shell_command", {"command": line})
    if seen.has("shell"):
        return ("shell", {"command": ["bash", "-lc", line]})
    return None


CODEX = Client(
    "codex",
    "@openai/codex",
    "codex",
    "responses",
    codex_launch,
    codex_spell,
    lambda body: bool({"exec_command", "shell", "shell_command"} & set(json.dumps(body.get("tools")).split('"'))),
    model="gpt-5.5",
)


# -- Gemini CLI and Qwen Code (a fork: the same steps, its own names) ------------------------------


def gemini_launch(at: Launch) -> tuple[list[str], dict[str, str]]:
    settings = at.home / ".gemini"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "settings.json").write_text(json.dumps(GEMINI_SETTINGS))
    env = {
        **tool_env(at.home),
        "GEMINI_API_KEY": "gm-cli-test",
        "GOOGLE_GEMINI_BASE_URL": at.url,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }
    return [str(at.exe), "-p", PROMPT, "--yolo"], env  # its default model: what users get


def qwen_launch(at: Launch) -> tuple[list[str], dict[str, str]]:
    settings = at.home / ".qwen"
    settings.mkdir(parents=True, exist_ok=True)
    model = {**QWEN_SETTINGS["model"], "name": at.model}
    (settings / "settings.json").write_text(json.dumps({**QWEN_SETTINGS, "model": model}))
    env = {
        **tool_env(at.home),
        "OPENAI_BASE_URL": at.url + "/v1",
        "OPENAI_API_KEY": "sk-qwen-test",
        "OPENAI_MODEL": at.model,
        "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
    }
    return [str(at.exe), "-p", PROMPT, "--yolo"], env


def fork_spell(step: Step, seen: Seen) -> Call | None:
    """Gemini CLI's and Qwen Code's steps: ``run_shell_command``, ``read_file`` (its path and
    range parameters as the version names them), ``replace`` or ``edit``. Each call narrates
    itself anew, as models do (Qwen Code stops a run at the 5th call identical to the letter)."""
    narrate = {"description": f"Step {seen.index + 1}: {step.label or step.kind}"}
    if step.kind == "shell":
        return ("run_shell_command", {"command": step.command, **narrate})
    if step.kind == "read":
        path = {(seen.param("read_file", "file_path", "absolute_path", "path") or "file_path"): seen.path(step.path)}
        if not step.count:
            return ("read_file", path)
        if seen.param("read_file", "start_line"):
            return ("read_file", {**path, "start_line": step.first, "end_line": step.first + step.count - 1})
        return ("read_file", {**path, "offset": step.first - 1, "limit": step.count})
    editor = seen.has("replace", "edit")
    if step.kind == "edit" and editor:
        args = {"file_path": seen.path(step.path), "old_string": step.old, "new_string": step.new}
        if seen.param(editor, "instruction"):
            args["instruction"] = "Make the change."
        return (editor, args)
    if step.kind == "bg_start":
        if seen.param("run_shell_command", "is_background"):
            return ("run_shell_command", {"command": step.command, "is_background": True, **narrate})
        background = f"nohup sh -c '{step.command}' > ticker.log 2>&1 &"
        return ("run_shell_command", {"command": background, **narrate})
    if step.kind == "bg_poll":
        return fork_poll(seen)
    return None


def fork_poll(seen: Seen) -> Call | None:
    """The job's output: its own tool where the version has one, else its log read by a command."""
    pid = seen.found(r"PID: (\d+)")
    if seen.has("read_background_output") and pid:
        return ("read_background_output", {"pid": int(pid)})
    output = seen.found(r"output file: (\S+?\.output)")
    return ("run_shell_command", {"command": f"tail -n 3 {output or 'ticker.log'}", "description": "Poll"})


GEMINI_CLI = Client(
    "gemini_cli",
    "@google/gemini-cli",
    "gemini",
    "gemini",
    gemini_launch,
    fork_spell,
    lambda body: "run_shell_command" in json.dumps(body.get("tools")),
    model="gemini-default",
)
QWEN_CODE = Client(
    "qwen_code",
    "@qwen-code/qwen-code",
    "qwen",
    "chat",
    qwen_launch,
    fork_spell,
    lambda body: "You are Qwen Code" in json.dumps((body.get("messages") or [{}])[0]),
    model="qwen-loop-test",
)


# -- GitHub Copilot CLI (chat completions) ---------------------------------------------------------


def copilot_launch(at: Launch) -> tuple[list[str], dict[str, str]]:
    env = {**copilot_env(at.url, at.home), "COPILOT_MODEL": at.model}
    command = [str(at.exe), "-p", PROMPT, "--allow-all-tools", "--log-dir", str(at.home / "logs")]
    return command, env


def copilot_spell(step: Step, seen: Seen) -> Call | None:
    narrate = {"description": f"Step {seen.index + 1}: {step.label or step.kind}"}
    if step.kind == "shell":
        return ("bash", {"command": step.command, **narrate, **_sync(seen)})
    if step.kind == "read":
        window = {"view_range": [step.first, step.first + step.count - 1]} if step.count else {}
        return ("view", {"path": seen.path(step.path), **window})
    if step.kind == "edit":
        return ("edit", {"path": seen.path(step.path), "old_str": step.old, "new_str": step.new})
    if step.kind == "bg_start":
        return ("bash", {"command": step.command, **narrate, **_sync(seen, background=True)})
    shell = seen.found(r"in background with shellId: (\w+)")
    if step.kind == "bg_poll" and shell and seen.has("read_bash"):
        id_key = seen.param("read_bash", "shellId", "sessionId") or "shellId"
        return ("read_bash", {id_key: shell, "delay": 1})
    return None


def _sync(seen: Seen, background: bool = False) -> dict[str, Any]:
    """How the version asks for a command run now or in the background (``mode`` or ``async``),
    and, in versions that want one, the shell session it runs in."""
    out: dict[str, Any] = {}
    if seen.param("bash", "mode"):
        out["mode"] = "async" if background else "sync"
    elif seen.param("bash", "async"):
        out["async"] = background
    if seen.param("bash", "sessionId"):
        out["sessionId"] = "bg" if background else "main"
    return out


COPILOT_CLI = Client(
    "copilot_cli",
    "@github/copilot",
    "copilot",
    "chat",
    copilot_launch,
    copilot_spell,
    lambda body: "read_bash" in json.dumps(body.get("tools")),
    model="gpt-4.1",
)


# -- Cline (chat completions): 3.x, and before 3.0 with native tools or XML tags in its text -------


def cline_launch(at: Launch) -> tuple[list[str], dict[str, str]]:
    """3.x: its settings files and its launcher script on Node 22 (tests/support/clis_cline.py);
    before 3.0: ``cline auth`` for the OpenAI-compatible provider, then ``cline task``."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "TMPDIR")}
    env = {**keep, **PROXIES, "HOME": str(at.home), "CI": "1", "NO_COLOR": "1", "CLINE_SESSION_BACKEND_MODE": "local"}
    launcher = at.exe.parent.parent / "lib" / "node_modules" / "cline" / "bin" / "cline"
    if launcher.exists():  # 3.x
        from support.clis_cline import write_settings

        write_settings(at.home, at.url)
        settings = at.home / ".cline" / "data" / "settings" / "providers.json"
        settings.write_text(settings.read_text().replace('"test-model"', json.dumps(at.model)))
        command = [node22() or "node", str(launcher), PROMPT, "-P", "openai-compatible", "-m", at.model]
        return [*command, "--cwd", str(at.work), "--auto-approve", "true"], env
    config = str(at.home / "cline-config")
    auth = [str(at.exe), "auth", "-p", "openai", "-k", "sk-cline-test", "-m", at.model, "-b", at.url + "/v1"]
    task = [str(at.exe), "task", PROMPT, "-y", "--config", config, "-c", str(at.work)]
    script = (
        " ".join(json.dumps(a) for a in [*auth, "--config", config]) + " && " + " ".join(json.dumps(a) for a in task)
    )
    return ["sh", "-c", script], env


def cline_spell(step: Step, seen: Seen) -> Call | None:
    """3.x: ``run_commands``, ``read_files``, ``editor``; before: ``execute_command``,
    ``read_file``, ``replace_in_file`` (SEARCH/REPLACE in ``diff``). No background jobs."""
    if seen.has("run_commands"):
        return _cline3(step, seen)
    if step.kind == "shell":
        return ("execute_command", {"command": step.command, "requires_approval": "false"})
    if step.kind == "read":
        if step.count and not seen.param("read_file", "start_line"):
            return None  # a range it cannot ask for
        window = {"start_line": step.first, "end_line": step.first + step.count - 1} if step.count else {}
        return ("read_file", {"path": seen.path(step.path), **window})
    if step.kind == "edit":
        path = seen.param("replace_in_file", "path", "absolutePath") or "path"
        diff = f"------- SEARCH\n{step.old}\n=======\n{step.new}\n+++++++ REPLACE"
        return ("replace_in_file", {path: seen.path(step.path), "diff": diff})
    return None


def _cline3(step: Step, seen: Seen) -> Call | None:
    if step.kind == "shell":
        return ("run_commands", {"commands": [step.command]})
    if step.kind == "read":
        window = {"start_line": step.first, "end_line": step.first + step.count - 1} if step.count else {}
        return ("read_files", {"files": [{"path": seen.path(step.path), **window}]})
    if step.kind == "edit":
        args = {"command": "str_replace", "path": seen.path(step.path), "old_text": step.old, "new_text": step.new}
        return ("editor", args)
    return None


def cline_finish(seen: Seen) -> Call | None:
    """Before 3.0 a reply without a tool is a mistake (three end the run): it ends by a call."""
    if seen.has("run_commands"):
        return None
    return ("attempt_completion", {"result": "The notes are in order."})


CLINE = Client(
    "cline",
    "cline",
    "cline",
    "chat",
    cline_launch,
    cline_spell,
    lambda body: "You are Cline" in json.dumps((body.get("messages") or [{}])[0]),
    model="test-model",
    finish=cline_finish,
)

# -- mini-SWE-agent (PyPI, litellm: chat completions), tool mode or text mode ------------------


def mini_launch(at: Launch) -> tuple[list[str], dict[str, str]]:
    """Its default config (one ``bash`` tool), or with variant ``text`` its text-based one (one
    fenced command per reply); tests/support/clis_mini.py's environment. The prefix is its
    virtual environment."""
    from support.clis_mini import TEXT, TOOL, environment

    mode = TEXT if at.variant == "text" else TOOL
    command = [str(at.exe), "-y", "--exit-immediately", "-m", f"openai/{at.model}", "-t", PROMPT]
    command += ["-o", str(at.home / "trajectory.json"), *mode.flags()]
    return command, environment(at.url, at.home.parent)


def mini_spell(step: Step, seen: Seen) -> Call | None:
    """Every step is a command (it has no other tool)."""
    return ("bash", {"command": step.command}) if step.kind in ("shell", "read") else None


def mini_in_text(name: str, args: Any) -> str:
    return f"THOUGHT: Step.\n\n```mswea_bash_command\n{args['command']}\n```"


MINI_SWE_AGENT = Client(
    "mini_swe_agent",
    "mini-swe-agent",
    "mini",
    "chat",
    mini_launch,
    mini_spell,
    lambda body: "You are a helpful assistant that can interact" in json.dumps((body.get("messages") or [{}])[0]),
    finish=lambda seen: ("bash", {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}),
    in_text=mini_in_text,
)

CLIENTS = {c.profile: c for c in (CLAUDE_CODE, CODEX, GEMINI_CLI, QWEN_CODE, COPILOT_CLI, CLINE, MINI_SWE_AGENT)}
