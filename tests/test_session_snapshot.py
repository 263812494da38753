"""The definition a session starts under is kept for its whole run
(``regulator.host.session_definition``): ``agents.yaml`` as the rules checked at the start, in
JSON, which the hook reads on every call; a file that does not check is kept as it is, so every
call still refuses it, naming its line and field, and fails closed."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from regulator.host.hooks import claude_code
from regulator.host.session_definition import session_definition, take_snapshot
from regulator.policy import PolicyError, load_definition
from regulator.policy.agent_effects import AgentEffects, load_agent_effects, load_agent_effects_file
from regulator.store import Layout

SHIPPED = Path(__file__).resolve().parent.parent / "policies" / "agents.yaml"


def test_the_snapshot_keeps_the_checked_rules_of_agents_yaml(instance: Path) -> None:
    layout = Layout(instance)
    definition_dir = instance / "regulator"
    definition_dir.mkdir(exist_ok=True)
    # A rule of the instance's own beside the shipped ones, to see it kept.
    text = SHIPPED.read_text().replace("readOnly: [Read,", "readOnly: [MyReader, Read,")
    assert text != SHIPPED.read_text()
    (definition_dir / "agents.yaml").write_text(text)
    definition = load_definition(instance)
    directory = take_snapshot(layout, "u-1", 1, definition)
    assert not (directory / "agents.yaml").exists()
    kept = directory / "agents.json"
    decoded = msgspec.json.decode(kept.read_bytes(), type=AgentEffects, strict=True)
    assert decoded == load_agent_effects_file(definition_dir / "agents.yaml")
    assert "MyReader" in decoded.agents["claude-code"].read_only
    # What the session's processes load is that file, and the same rules.
    under = session_definition(layout, "u-1", 1, definition)
    assert load_agent_effects(under) == decoded
    # The snapshot is kept: the file in force changing later does not change it.
    (definition_dir / "agents.yaml").write_text(text.replace("MyReader, ", ""))
    assert take_snapshot(layout, "u-1", 1, load_definition(instance)) == directory
    assert json.loads(kept.read_text())["agents"]["claude-code"]["readOnly"][0] == "MyReader"


def test_an_agents_yaml_that_does_not_check_is_kept_as_written_and_every_call_asks(
    instance: Path,
) -> None:
    layout = Layout(instance)
    definition_dir = instance / "regulator"
    definition_dir.mkdir(exist_ok=True)
    broken = SHIPPED.read_text().replace("readOnly: [Read,", "readOnly: [42, Read,")
    (definition_dir / "agents.yaml").write_text(broken)

    def hook(event: str, **fields: object) -> dict[str, object]:
        payload = {"session_id": "s1", "cwd": str(instance), "hook_event_name": event}
        return claude_code({**payload, **fields}, layout, load_definition(instance), env={})

    hook("SessionStart", source="startup")
    directory = instance / ".regulator" / "sessions" / "session-claude-s1" / "a1.definition"
    assert (directory / "agents.yaml").read_text() == broken
    assert not (directory / "agents.json").exists()
    # The hook command turns the refusal into `ask` (regulator.cli.hook_cmds); here it raises,
    # naming the snapshot's file and the line.
    with pytest.raises(PolicyError, match=r"a1\.definition/agents\.yaml:\d+: .*readOnly"):
        hook("PreToolUse", tool_name="Read", tool_input={"file_path": "README.md"})


def test_a_snapshot_cut_short_leaves_no_other_agents_file_to_be_read_first(instance: Path) -> None:
    # A snapshot interrupted before `complete` (or one an older regulator began) may hold an
    # agents.yaml; taken again, the snapshot's agents.json must be the only agents file, since
    # agents.yaml would be read first.
    layout = Layout(instance)
    directory = instance / ".regulator" / "sessions" / "u-1" / "a1.definition"
    directory.mkdir(parents=True)
    (directory / "agents.yaml").write_text(
        SHIPPED.read_text().replace("readOnly: [Read,", "readOnly: [Bash, Read,")
    )
    definition = load_definition(instance)
    assert take_snapshot(layout, "u-1", 1, definition) == directory
    assert sorted(p.name for p in directory.glob("agents.*")) == ["agents.json"]
    rules = load_agent_effects(session_definition(layout, "u-1", 1, definition))
    assert "Bash" not in rules.agents["claude-code"].read_only
