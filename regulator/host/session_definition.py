"""The definition a session runs under: the one in force when it started, kept for its whole run.

A change to the policies, the workload or ``agents.yaml`` while a session runs takes effect for
the next session, not this one: the agent must not be able to loosen its own gate by getting a
file changed under it, and a person editing a policy mid-session should not change the rules of
a session already running. So when a session starts (a unit's attempt dispatched by the loop, or
a session unit a person's agent opens), the files of the definition in force — the four
policies, the workload (and the original's profiles), ``agents.yaml`` — are copied to
``.regulator/sessions/<unit>/a<N>.definition/``, and every process of that session (the MCP
server, ``regulator tool``, the hooks) loads its definition from there. ``agents.yaml`` is kept
as ``agents.json``, the rules as they were checked at the start: the hook reads them on every
tool call, and JSON needs no YAML parser.

This module is light on purpose: the Claude Code hook finds a session's ``agents.json`` here on
every tool call. Which unit a session key names (``session-<key>``, ``-2``, ``-3`` … for later
runs of the same key) lives here too, for the same reason.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

from regulator.host.environment import SESSION_ENV
from regulator.policy import POLICY_KINDS, Definition
from regulator.policy.agent_effects import AGENTS_NAMES, effects_path
from regulator.policy.loader import read_definition_text
from regulator.store import Layout, is_valid_unit_id, write_text_atomic

_COMPLETE = "complete"


def unit_id_for(key: str) -> str:
    """``session-<key>``, with the key cut to what a unit id may hold."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", key).strip("-.")[:48] or uuid.uuid4().hex[:12]
    unit_id = f"session-{cleaned}"
    if not is_valid_unit_id(unit_id):
        unit_id = f"session-{uuid.uuid4().hex[:12]}"
    return unit_id


def candidates(unit_id: str) -> Iterator[str]:
    """``session-<key>``, then ``session-<key>-2``, ``-3``…: one unit per run of the session."""
    yield unit_id
    for n in range(2, 1000):
        yield f"{unit_id}-{n}"


def names_unit(key: str, unit_id: str) -> bool:
    """Whether session key ``key`` names ``unit_id`` (one of its runs)."""
    base = unit_id_for(key)
    return unit_id == base or (
        unit_id.startswith(f"{base}-") and unit_id[len(base) + 1 :].isdigit()
    )


def key_from(env: Mapping[str, str]) -> str | None:
    key = env.get(SESSION_ENV, "").strip()
    return key or None


def snapshot_dir(layout: Layout, unit_id: str, attempt: int) -> Path:
    return layout.state / "sessions" / unit_id / f"a{attempt}.definition"


def _files(definition: Definition) -> list[tuple[Path, str]]:
    """Every file of ``definition`` a session reads, with its place in the snapshot."""
    # The workload's models (pydantic) load here, when a session starts, not on every call the
    # hook answers.
    from regulator.policy.workload import is_original_format, workload_path

    files = [
        (source, f"policies/{source.name}")
        for source in (definition.source(kind) for kind in POLICY_KINDS)
    ]
    workload = workload_path(definition)
    if is_original_format(workload):
        files.append((workload, f"workload/{workload.name}"))
        profiles = workload.parent.parent / "profiles"
        if profiles.is_dir():
            files += [(p, f"profiles/{p.name}") for p in sorted(profiles.glob("*.json"))]
    else:
        files.append((workload, workload.name))
    return files


def _agents_file(definition: Definition) -> tuple[str, str]:
    """The snapshot's agents file: ``agents.json``, the rules as checked when the session
    started, which the hook reads on every call without a YAML parser; a file that does not
    check is copied as it is, so that every call refuses it with its line and field."""
    import msgspec

    from regulator.policy import PolicyError
    from regulator.policy.agent_effects import load_agent_effects_file

    source = effects_path(definition)
    try:
        checked = load_agent_effects_file(source)
    except PolicyError:
        return source.name, read_definition_text(source)
    return "agents.json", msgspec.json.format(msgspec.json.encode(checked).decode()) + "\n"


def take_snapshot(layout: Layout, unit_id: str, attempt: int, definition: Definition) -> Path:
    """Copy ``definition`` for the session of ``unit_id``'s ``attempt``, once.

    A snapshot that exists is kept: a process joining a running session must not refresh it.
    """
    directory = snapshot_dir(layout, unit_id, attempt)
    if (directory / _COMPLETE).is_file():
        return directory
    for source, name in _files(definition):
        write_text_atomic(directory / name, read_definition_text(source))
    name, text = _agents_file(definition)
    # One agents file: another name left by a snapshot cut short would be read first.
    for other in AGENTS_NAMES:
        if other != name:
            (directory / other).unlink(missing_ok=True)
    write_text_atomic(directory / name, text)
    write_text_atomic(directory / _COMPLETE, "")
    return directory


def session_definition(
    layout: Layout, unit_id: str, attempt: int, current: Definition
) -> Definition:
    """The definition the session runs under: its snapshot, else (a session that started
    before snapshots were kept) the one in force."""
    directory = snapshot_dir(layout, unit_id, attempt)
    if (directory / _COMPLETE).is_file():
        return Definition(directory)
    return current


def latest_session_unit(layout: Layout, key: str) -> str | None:
    """The newest session unit a session key has started, by the sessions it has kept."""
    latest = None
    for candidate in candidates(unit_id_for(key)):
        if not (layout.state / "sessions" / candidate).is_dir():
            break
        latest = candidate
    return latest
