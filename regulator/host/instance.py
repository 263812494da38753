"""An instance: a git repository with a ``.regulator/`` directory, and ``regulator init``.

``init`` is the only writer of the manifest and the canaries. It refuses a directory outside a
git repository and an instance that already exists, and checks the definition before it writes
anything, so a refusal leaves the repository as it was.

Where the repository's definition has no interaction policy of its own, ``init`` writes one
naming only the person who ran it, pinned to their OS user: the shipped policy's people are
examples, and an instance that kept them would let anyone on the machine answer as them.
"""

from __future__ import annotations

import json
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from regulator.host import gitops
from regulator.policy import Definition, PolicyError, load_definition, shipped_policies_dir
from regulator.policy.loader import check_directory, read_definition_data
from regulator.protocol.clock import Clock, now_iso, system_clock
from regulator.protocol.errors import Refused
from regulator.protocol.manifest import InstanceManifest
from regulator.protocol.policies import InteractionPolicy, Person
from regulator.rules.authority import process_os_user
from regulator.store import (
    Layout,
    NotUnderInstance,
    RecordNotFound,
    create_json_exclusive,
    read_json,
    read_text,
)
from regulator.store.records import write_text_atomic

# A variable whose name ends in TOKEN, SECRET, KEY or PASSWORD, with a value of 8 or more
# characters (optionally double-quoted): the original's rule for what a canary is.
_CANARY_LINE = re.compile(
    r'^\s*(?:export\s+)?[A-Z0-9_]*(?:TOKEN|SECRET|KEY|PASSWORD)\s*=\s*"?([^"\n]{8,}?)"?\s*$'
)


class InitError(Refused):
    """``regulator init`` will not make an instance here (no directory, not a git checkout, a
    bad person name, a file in the way); nothing was written."""


def default_actor() -> str:
    return f"{os_user()}@{socket.gethostname()}"


def os_user() -> str:
    # From the password database by uid: $LOGNAME and $USER are the caller's to set.
    return process_os_user()


def canaries_from_env_file(text: str) -> list[str]:
    """The secret values of a ``.env`` text that tool output and the screen must never show."""
    values = []
    for line in text.splitlines():
        match = _CANARY_LINE.match(line)
        if match:
            values.append(match.group(1).strip())
    return values


@dataclass(frozen=True)
class InitResult:
    root: Path
    manifest: InstanceManifest
    canaries: int
    # init's commit, and the files it holds: the .gitignore line, the interaction policy.
    commit: str | None
    committed: tuple[str, ...] = ()
    # The interaction policy init wrote, if it wrote one: its one person and their OS user.
    person_policy: Path | None = None
    person: str | None = None
    person_os_user: str | None = None


# A letter, then letters, digits, '.', '_' or '-': a name to type after --by, that YAML keeps a
# string and no terminal shows as something else.
_PERSON_NAME = re.compile(r"[^\W\d_][\w.-]{0,63}")
PERSON_NAME_RULE = "a letter, then up to 63 letters, digits, '.', '_' or '-'"


def is_person_name(name: str) -> bool:
    return _PERSON_NAME.fullmatch(name) is not None


def interaction_policy_text(people: list[dict[str, Any]], *, heading: str) -> str:
    """An interaction policy of the shipped timeouts, attention and reminder and of ``people``
    (each its fields as the policy spells them), with ``heading`` as its first comment."""
    _, shipped = read_definition_data("interaction", shipped_policies_dir() / "interaction.yaml")
    values = yaml.safe_dump(
        {key: value for key, value in shipped.items() if key != "people"},
        sort_keys=False,
        allow_unicode=True,
        width=96,
    )
    # Every value as JSON: a name like `yes` or `null` stays a string in YAML.
    lines = [
        "  - { "
        + ", ".join(f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in p.items())
        + " }\n"
        for p in people
    ]
    return (
        "".join(f"# {line}\n" for line in heading.splitlines())
        + values
        + "# Who may answer, acknowledge, resolve, escalate or act as S5 (docs/policies.md).\n"
        "# To add someone, add a line and commit the file, for example:\n"
        "#   - { name: dave, resolveUpTo: blocking, acceptRisk: false, actAsS5: false, "
        "osUsers: [dave] }\n"
        "# osUsers: the OS users who may act as the person; without it, anyone on this machine\n"
        "# may (`regulator doctor` warns).\n"
        "people:\n" + "".join(lines)
    )


def checked_interaction_policy(people: list[dict[str, Any]], *, heading: str) -> str:
    """:func:`interaction_policy_text`, once it reads back as exactly the people meant."""
    text = interaction_policy_text(people, heading=heading)
    names = ", ".join(repr(p.get("name")) for p in people)
    try:
        wanted = [Person.from_json_dict(p) for p in people]
        policy = InteractionPolicy.from_json_dict(yaml.safe_load(text))
    except (ValueError, yaml.YAMLError) as exc:
        raise InitError(f"{names}: cannot be the people of an interaction policy: {exc}") from None
    if policy.people != wanted:
        raise InitError(f"{names}: do not read back from YAML as written")
    return text


def _person_policy(name: str, user: str) -> str:
    """The policy ``init`` writes: ``name``, with every grant, whom only ``user`` may name."""
    person = {
        "name": name,
        "resolveUpTo": "critical",
        "acceptRisk": True,
        "actAsS5": True,
        "osUsers": [user],
    }
    heading = (
        "This repository's interaction policy, written by `regulator init`: how long a question\n"
        "waits, how much a unit may ask, and who may answer and decide."
    )
    return checked_interaction_policy([person], heading=heading)


def _own_interaction_policy(root: Path, defn: Definition, override: Path | None) -> Path | None:
    """Where init writes the repository's interaction policy; None when it has one, or runs
    under a ``--definition`` elsewhere (whose people are that definition's author's to list)."""
    own = root / "regulator"
    if override is not None and defn.root != own.resolve():
        return None
    if not defn.is_shipped("interaction"):
        return None
    check_directory(own, "init writes the repository's interaction policy in regulator/policies/")
    return own / "policies" / "interaction.yaml"


def init_instance(
    directory: Path,
    *,
    by: str | None = None,
    definition: Path | None = None,
    clock: Clock = system_clock,
) -> InitResult:
    if not directory.is_dir():
        raise InitError(f"{directory}: no such directory")
    root = gitops.toplevel(directory.resolve())
    if root is None:
        raise InitError(
            f"{directory}: not in a git repository; an instance is a git repository "
            "(run `git init` first)"
        )
    layout = Layout(root)
    if layout.manifest.exists() or layout.manifest.is_symlink():
        try:
            old = read_json(layout.manifest)
            when = f" (initialized {old.get('initializedAt')} by {old.get('initializedBy')})"
        except Exception:
            when = ""
        raise InitError(
            f"{layout.manifest}: an instance already exists here{when}; init never re-initializes"
        )

    defn = load_definition(root, definition)
    problems = [p for probs in defn.check().values() for p in probs]
    if problems:
        raise PolicyError(problems)

    gitignore = root / ".gitignore"
    if gitignore.exists() and not gitignore.is_file():
        # A FIFO would block the read below, and a directory cannot take the line.
        raise InitError(f"{gitignore}: is not a regular file; init adds .regulator/ to it")
    ignore_text = gitignore.read_text(encoding="utf-8") if gitignore.exists() else ""
    needs_ignore = not any(
        line.strip() in {".regulator", ".regulator/", "/.regulator", "/.regulator/"}
        for line in ignore_text.splitlines()
    )
    if (
        needs_ignore
        and gitops.git(root, "status", "--porcelain", "--", ".gitignore").stdout.strip()
    ):
        raise InitError(
            f"{gitignore}: has uncommitted changes; commit them first "
            "(init commits the line that ignores .regulator/)"
        )

    # The people of a fresh instance: only the person who ran init (--by, else their OS user),
    # and only from their OS user. Decided, and refused, before anything is written.
    person_policy = _own_interaction_policy(root, defn, definition)
    person = user = policy_text = None
    if person_policy is not None:
        user = os_user()
        person = by if by is not None else user
        if not is_person_name(person):
            given = f"--by {person!r}" if by is not None else f"the OS user {person!r}"
            hint = "" if by is not None else "; name the person with --by NAME"
            raise InitError(f"{given}: not a person name ({PERSON_NAME_RULE}){hint}")
        if os.path.lexists(person_policy):
            raise InitError(f"{person_policy}: exists, but regulator/policies/ did not load")
        ignored = gitops.git(root, "check-ignore", "-q", "--", str(person_policy), check=False)
        if ignored.returncode == 0:
            raise InitError(
                f"{person_policy}: git ignores it; init commits the interaction policy it writes "
                "(the people who may decide belong to the repository)"
            )
        policy_text = _person_policy(person, user)
    if defn.root is None and person_policy is not None:
        definition_root = person_policy.parent.parent
    else:
        definition_root = defn.root if defn.root is not None else shipped_policies_dir().parent
    # The policy's directory may not exist yet: it will be in this repository.
    harness_dir = definition_root if definition_root.is_dir() else root
    harness = gitops.head(harness_dir) if gitops.toplevel(harness_dir) else None
    manifest = InstanceManifest.from_json_dict(
        {
            "version": 1,
            "definition": {
                "root": str(definition_root),
                "name": "regulator",
                "registry": 0,
                "harnessRevision": harness or "unknown",
                "pi": "none",
            },
            "initializedAt": now_iso(clock),
            "initializedBy": by or default_actor(),
        }
    )

    env_file = root / ".env"
    if (env_file.exists() or env_file.is_symlink()) and not env_file.is_file():
        # Its values become the canaries: unreadable must not read as "no secrets".
        raise InitError(f"{env_file}: is not a regular file; init reads its secrets as canaries")
    canaries = (
        canaries_from_env_file(env_file.read_text(encoding="utf-8", errors="replace"))
        if env_file.is_file()
        else []
    )

    if person_policy is not None and policy_text is not None:
        person_policy.parent.mkdir(parents=True, exist_ok=True)
        with person_policy.open("x", encoding="utf-8") as out:  # never over a policy someone wrote
            out.write(policy_text)
    layout.state.mkdir(mode=0o700, exist_ok=True)
    write_text_atomic(layout.canaries, "".join(f"{value}\n" for value in canaries))
    create_json_exclusive(layout.manifest, manifest.to_json_dict())

    # One commit holds what init adds to the repository: an untracked policy would leave the
    # base dirty, and a unit's merge refuses a dirty base.
    to_commit = []
    if needs_ignore:
        sep = "" if not ignore_text or ignore_text.endswith("\n") else "\n"
        gitignore.write_text(f"{ignore_text}{sep}.regulator/\n", encoding="utf-8")
        to_commit.append(".gitignore")
    if person_policy is not None:
        to_commit.append(str(person_policy.relative_to(root)))
    commit = None
    if to_commit:
        gitops.git(root, "add", "--", *to_commit)
        gitops.git(
            root,
            *gitops.identity_args(root),
            "commit",
            "--quiet",
            "-m",
            f"regulator init: instance prepared by {manifest.initialized_by}",
            "--",
            *to_commit,
        )
        commit = gitops.head(root)
    return InitResult(
        root, manifest, len(canaries), commit, tuple(to_commit), person_policy, person, user
    )


def read_canaries(layout: Layout) -> list[str]:
    """The instance's canary values; none when the file is missing.

    Read through the store, so a symlink or a FIFO planted as ``canaries`` is refused
    (:class:`StoreError`) rather than followed, blocked on, or taken as "no secrets".
    """
    try:
        text = read_text(layout.canaries)
    except (RecordNotFound, NotUnderInstance):
        return []
    return [line for line in text.splitlines() if line]
