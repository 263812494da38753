"""What the agent cannot do unasked, whatever the definition says: change what governs it, or
act as a person.

A write to regulator's definition, the instance's state, the agents' configuration or git's
hooks, by a file tool or a Bash command, and a Bash command that runs a person's act, are
consent questions flagged as such; the hook never allows them because nobody is there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
import yaml

from regulator.host.guarded_places import guarded_places
from regulator.policy import load_definition
from regulator.policy.agent_effects import (
    AgentRules,
    Verdict,
    agent_rules,
    classify,
    load_agent_effects,
)
from regulator.policy.loader import Definition, shipped_policies_dir
from regulator.store import Layout

from .conftest import git

RULES = load_agent_effects(load_definition(None)).agents["claude-code"]
# A definition as loose as can be: every tool read-only, nothing asked, allow when alone.
LOOSE = agent_rules(
    {"readOnly": ["Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"], "nobodyPresent": "allow"}
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def verdict(
    repo: Path,
    home: Path,
    tool: str,
    tool_input: dict[str, Any],
    *,
    rules: AgentRules = RULES,
    cwd: Path | None = None,
    definition: Definition | None = None,
) -> Verdict:
    layout = Layout(repo)
    where = repo if cwd is None else cwd
    chosen = Definition(None) if definition is None else definition

    def guard() -> Any:
        return guarded_places(layout, chosen, where, {"HOME": str(home)})

    return classify(rules, tool, tool_input, repo, cwd=where, guard=guard)


def write(repo: Path, home: Path, path: str | Path, **kwargs: Any) -> Verdict:
    return verdict(repo, home, "Write", {"file_path": str(path), "content": "x"}, **kwargs)


def bash(repo: Path, home: Path, command: str, **kwargs: Any) -> Verdict:
    return verdict(repo, home, "Bash", {"command": command}, **kwargs)


@pytest.mark.parametrize(
    "path",
    [
        "regulator/agents.yaml",
        "regulator/agents.json",
        "regulator/policies/interaction.yaml",
        "regulator/workload.yaml",
        "regulator/workload/software-development.json",
        "regulator/profiles/implementer.json",
        "regulator/identity/purpose.md",
        ".regulator/signals.ndjson",
        ".regulator/sessions/session-s1/a1.ndjson",
        ".claude/settings.json",
        ".claude/settings.local.json",
        ".mcp.json",
        ".codex/config.toml",
        ".git/hooks/pre-commit",
        ".git/config",
        "src/../.claude/settings.json",
        ".CLAUDE/settings.json",
    ],
)
def test_a_write_to_what_governs_the_agent_is_asked_whatever_the_definition_says(
    repo: Path, home: Path, path: str
) -> None:
    for rules in (RULES, LOOSE):
        for target in (repo / path, Path(path)):  # absolute, and relative to the repository
            found = write(repo, home, target, rules=rules)
            assert found.governs and not found.read_only, (rules, target)
            assert found.effect is not None
            assert found.effect.startswith("changes what governs the agent: ")


def test_the_person_reads_which_file_and_what_it_is(repo: Path, home: Path) -> None:
    found = write(repo, home, repo / "regulator" / "agents.yaml")
    assert found.effect == (
        "changes what governs the agent: regulator/agents.yaml (regulator's definition)"
    )
    assert found.action == f"Write: {repo / 'regulator' / 'agents.yaml'}"


@pytest.mark.parametrize("tool", ["Edit", "MultiEdit"])
def test_every_file_tool_is_guarded(repo: Path, home: Path, tool: str) -> None:
    found = verdict(repo, home, tool, {"file_path": str(repo / ".mcp.json")}, rules=LOOSE)
    assert found.governs


def test_a_notebook_edit_is_guarded_by_its_notebook_path(repo: Path, home: Path) -> None:
    target = repo / ".claude" / "x.ipynb"
    found = verdict(repo, home, "NotebookEdit", {"notebook_path": str(target)}, rules=LOOSE)
    assert found.governs


def test_a_write_through_a_symlink_is_guarded_where_it_lands(repo: Path, home: Path) -> None:
    (repo / ".claude").mkdir()
    (repo / "innocent").symlink_to(repo / ".claude")
    assert write(repo, home, repo / "innocent" / "settings.json", rules=LOOSE).governs


def test_a_write_elsewhere_in_the_repository_is_not_the_guards_business(
    repo: Path, home: Path
) -> None:
    found = write(repo, home, repo / "src" / "app.py", rules=LOOSE)
    assert found.read_only and not found.governs  # the loose definition decides


@pytest.mark.parametrize(
    "path", [".claude/settings.json", ".claude.json", ".codex/config.toml", ".gitconfig"]
)
def test_the_agents_configuration_in_the_home_directory_is_guarded(
    repo: Path, home: Path, path: str
) -> None:
    assert write(repo, home, home / path, rules=LOOSE).governs
    assert write(repo, home, f"~/{path}", rules=LOOSE).governs


def test_git_s_core_hooks_path_is_guarded(repo: Path, home: Path) -> None:
    git(repo, "config", "core.hooksPath", "tools/hooks")
    assert write(repo, home, repo / "tools" / "hooks" / "pre-commit", rules=LOOSE).governs
    assert not write(repo, home, repo / "tools" / "other", rules=LOOSE).governs


def test_a_definition_kept_outside_the_repository_is_guarded(
    repo: Path, home: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "definition"
    (elsewhere / "policies").mkdir(parents=True)
    found = write(repo, home, elsewhere / "agents.yaml", definition=Definition(elsewhere))
    assert found.governs
    assert write(repo, home, shipped_policies_dir() / "agents.yaml", rules=LOOSE).governs


def test_the_python_environment_the_hook_runs_in_is_guarded(repo: Path, home: Path) -> None:
    # A .pth file in site-packages runs code in every `regulator hook` that starts.
    site_packages = Path(sysconfig.get_paths()["purelib"])
    assert write(repo, home, site_packages / "evil.pth", rules=LOOSE).governs
    assert bash(repo, home, f"echo 'import os' > {site_packages}/evil.pth", rules=LOOSE).governs
    # Running the interpreter, or sourcing its activation script, writes nothing there.
    scripts = Path(sysconfig.get_paths()["scripts"])
    assert not bash(repo, home, f"{sys.executable} -m pytest -q", rules=LOOSE).governs
    assert not bash(repo, home, f"source {scripts}/activate && make", rules=LOOSE).governs


def test_the_units_own_worktree_is_its_workspace_but_what_governs_stays_guarded(
    repo: Path, home: Path
) -> None:
    worktree = repo / ".regulator" / "worktrees" / "u1"
    (worktree / "src").mkdir(parents=True)
    other = repo / ".regulator" / "worktrees" / "u2"

    def written(path: Path) -> bool:
        return write(repo, home, path, rules=LOOSE, cwd=worktree / "src").governs

    assert not written(worktree / "src" / "app.py")
    assert not bash(repo, home, f"rm {worktree}/src/*.pyc", rules=LOOSE, cwd=worktree).governs
    assert bash(repo, home, f"rm {other}/src/*.pyc", rules=LOOSE, cwd=worktree).governs
    assert written(worktree / "regulator" / "agents.yaml")
    assert written(worktree / ".claude" / "settings.json")
    assert written(worktree / ".git")
    assert written(other / "src" / "app.py")  # another unit's
    assert written(repo / ".regulator" / "signals.ndjson")
    # From the repository itself, no worktree is anyone's own.
    assert write(repo, home, worktree / "src" / "app.py", rules=LOOSE).governs


@pytest.mark.parametrize(
    "command",
    [
        "echo '{}' > .claude/settings.json",
        "echo x >> regulator/agents.yaml",
        "cp /tmp/evil regulator/policies/interaction.yaml",
        "rm -rf .regulator/sessions",
        "rm -rf regulator",
        "mv .mcp.json .mcp.json.bak",
        "chmod +x .git/hooks/pre-commit",
        "tee .git/hooks/pre-commit < /tmp/evil",
        "git diff --output=.regulator/signals.ndjson",
        "sed -i s/ask/allow/ ~/.claude/settings.json",
        'sed -i s/ask/allow/ "$HOME/.claude/settings.json"',
        "cd regulator && rm agents.yaml",
        "cd .git; rm hooks/pre-commit",
        "rm .claude/*",
        "rm -rf *",
        'rm -rf "$PWD/regulator"',
        "rm .cl*/settings.json",
        "bash -c 'rm .mcp.json'",
        "python3 -c \"open('.claude/settings.json', 'w').write('{}')\"",
        "sh <<EOF\nrm -rf .regulator\nEOF",
        "x=.claude/settings.json; rm $x",
        "for f in .git/hooks/*; do rm $f; done",
        "git config core.hooksPath /tmp/evil",
        "git config --global alias.st '!rm -rf ~'",
    ],
)
def test_a_bash_command_that_writes_where_it_names_a_guarded_place_is_asked(
    repo: Path, home: Path, command: str
) -> None:
    found = bash(repo, home, command, rules=LOOSE)
    assert found.governs, command
    assert found.effect is not None and "changes what governs the agent" in found.effect


@pytest.mark.parametrize(
    "command",
    [
        "cat .claude/settings.json",
        "ls -la .regulator regulator/policies",
        "git log -p -- regulator/agents.yaml",
        "npm test",
        "rm -rf build",
        "git add src/app.py && git commit -m 'regulator: fix the hook'",
        "git add .",
        'cp notes.txt "$dest/notes.txt"',
        'rm -rf "$TMPDIR"/build *.pyc',
    ],
)
def test_a_bash_command_that_only_reads_there_or_writes_elsewhere_is_not_flagged(
    repo: Path, home: Path, command: str
) -> None:
    assert not bash(repo, home, command).governs


@pytest.mark.parametrize(
    ("command", "act"),
    [
        ("regulator answer 6698 --by carol --answer yes", "regulator answer"),
        ("regulator --instance . answer 6698 --answer yes", "regulator answer"),
        ("/work/.venv/bin/regulator obligation resolve 1 --disposition accepted", None),
        ("python3 -m regulator obligation ack 1", "regulator obligation ack"),
        ("python -mregulator identity accept p1", "regulator identity accept"),
        ("python3 -m regulator.cli.main answer 1 --answer yes", "regulator answer"),
        ("env REGULATOR_PERSON=carol regulator unit accept u1", "regulator unit accept"),
        ("timeout 5 regulator unit replan u1", "regulator unit replan"),
        ("uv run regulator unit remediate u1", "regulator unit remediate"),
        ("regulator memory retract m1", "regulator memory retract"),
        ("sh -c 'regulator answer 1 --answer yes'", "regulator answer"),
        ("ls && regulator answer 1 --answer yes", "regulator answer"),
        ("regulator $cmd 1", "regulator, with a command regulator cannot read"),
    ],
)
def test_a_command_that_runs_a_persons_act_is_asked_as_such(
    repo: Path, home: Path, command: str, act: str | None
) -> None:
    found = bash(repo, home, command, rules=LOOSE)
    assert found.person_act and not found.read_only
    expected = act or "regulator obligation resolve"
    assert found.effect == f"acts as a person: {expected}"


@pytest.mark.parametrize(
    "command",
    [
        "regulator ask --kind consent --subject x --question y --action z",
        "regulator tool notify_owner",
        "regulator obligation show 1",
        "regulator unit show u1",
        "regulator status",
        "echo regulator answer",
        "grep -rn answer regulator/",
    ],
)
def test_other_regulator_commands_are_not_a_persons_act(
    repo: Path, home: Path, command: str
) -> None:
    assert not bash(repo, home, command).person_act


# -- through the hook -------------------------------------------------------------------------


def _definition(repo: Path, nobody_present: str, keep_agent: bool = True) -> None:
    data = yaml.safe_load((shipped_policies_dir() / "agents.yaml").read_text())
    data["agents"]["claude-code"]["nobodyPresent"] = nobody_present
    if not keep_agent:
        data["agents"] = {"codex": data["agents"]["claude-code"]}
    (repo / "regulator" / "policies").mkdir(parents=True, exist_ok=True)
    (repo / "regulator" / "agents.yaml").write_text(yaml.safe_dump(data))


def _hook(repo: Path, home: Path, tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    payload = {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "cwd": str(repo),
        "tool_name": tool,
        "tool_input": tool_input,
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGULATOR_")}
    done = subprocess.run(
        [sys.executable, "-m", "regulator", "hook", "claude-code"],
        cwd=repo,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env={**env, "HOME": str(home)},
        timeout=120,
        check=True,
    )
    reply: dict[str, Any] = json.loads(done.stdout)["hookSpecificOutput"]
    return reply


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("Write", {"file_path": "regulator/agents.yaml", "content": "x"}),
        ("Edit", {"file_path": ".claude/settings.json", "old_string": "a", "new_string": "b"}),
        ("Bash", {"command": "echo x > .git/hooks/pre-commit"}),
        ("Bash", {"command": "regulator answer 1 --by carol --answer yes"}),
    ],
)
def test_with_nobody_present_allow_the_hook_still_asks_before_what_governs_the_agent(
    instance: Path, home: Path, tool: str, tool_input: dict[str, Any]
) -> None:
    _definition(instance, "allow")
    reply = _hook(instance, home, tool, tool_input)
    assert reply["permissionDecision"] == "ask"
    assert "nobody is in the control room" in reply["permissionDecisionReason"]
    # The ordinary calls the definition allows are allowed still.
    plain = _hook(instance, home, "Bash", {"command": "npm test"})
    assert plain["permissionDecision"] == "allow"


def test_with_nobody_present_the_hook_allows_a_bash_line_that_only_reads_and_asks_the_rest(
    instance: Path, home: Path
) -> None:
    # The shipped definition: a look is allowed outright, as a Read is, not left to the agent's
    # own prompt (which, headless, refuses what its own list lacks).
    looked = _hook(instance, home, "Bash", {"command": "git --no-pager log -1 --oneline"})
    assert looked["permissionDecision"] == "allow"
    assert looked["permissionDecisionReason"] == "regulator: Bash only reads"
    wrote = _hook(instance, home, "Bash", {"command": "git log -1 --output=notes.txt"})
    assert wrote["permissionDecision"] == "ask"
    assert "nobody is in the control room" in wrote["permissionDecisionReason"]


def test_with_nobody_present_deny_the_hook_denies_it(instance: Path, home: Path) -> None:
    _definition(instance, "deny")
    reply = _hook(instance, home, "Write", {"file_path": ".mcp.json", "content": "{}"})
    assert reply["permissionDecision"] == "deny"


def test_a_definition_without_rules_for_the_agent_does_not_lift_the_guard(
    instance: Path, home: Path
) -> None:
    _definition(instance, "allow", keep_agent=False)
    reply = _hook(instance, home, "Write", {"file_path": "regulator/agents.yaml"})
    assert reply["permissionDecision"] == "ask"
    assert "changes what governs the agent" in reply["permissionDecisionReason"]
