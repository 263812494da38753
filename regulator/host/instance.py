"""An instance: a git repository with a ``.regulator/`` directory, and ``regulator init``.

``init`` is the only writer of the manifest and the canaries. It refuses a directory outside a
git repository and an instance that already exists, and checks the definition before it writes
anything, so a refusal leaves the repository as it was.
"""

from __future__ import annotations

import json
import re
import socket
from dataclasses import dataclass
from pathlib import Path

import yaml

from regulator.host import gitops
from regulator.policy import PolicyError, load_definition, shipped_policies_dir
from regulator.protocol.clock import Clock, now_iso, system_clock
from regulator.protocol.errors import Refused
from regulator.protocol.manifest import InstanceManifest
from regulator.protocol.policies import InteractionPolicy
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
    pass


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
    gitignore_commit: str | None
    # The interaction policy written for `init --by NAME`, if init wrote one.
    person_policy: Path | None = None


def write_person_policy(path: Path, name: str, user: str) -> Path:
    """A copy of the shipped interaction policy with ``name`` added as a person: every grant,
    and only the OS user who ran init may act as them."""
    shipped = (shipped_policies_dir() / "interaction.yaml").read_text(encoding="utf-8")
    person = {
        "name": name,
        "resolveUpTo": "critical",
        "acceptRisk": True,
        "actAsS5": True,
        "osUsers": [user],
    }
    text = (
        f"{shipped.rstrip()}\n"
        f"  # Added by `regulator init --by {name}`:\n"
        f"  - {json.dumps(person)}\n"
    )
    try:
        policy = InteractionPolicy.model_validate(yaml.safe_load(text))
    except (ValueError, yaml.YAMLError) as exc:
        raise InitError(
            f"--by {name!r}: cannot be a person of the interaction policy: {exc}"
        ) from None
    if policy.person(name) is None:
        raise InitError(f"{shipped_policies_dir()}/interaction.yaml: its people: list is not last")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("x", encoding="utf-8") as out:  # never over a policy someone wrote
        out.write(text)
    return path


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

    # `init --by NAME` makes NAME a person of the repository's interaction policy (a copy of
    # the shipped one, with NAME as its only person) when the repository has none yet, so a
    # new user can answer their own agent's questions at once. Written after every check.
    person_policy = None
    if (
        by is not None
        and definition is None
        and defn.root is None
        and defn.interaction.person(by) is None
    ):
        person_policy = root / "regulator" / "policies" / "interaction.yaml"
        if person_policy.exists() or person_policy.is_symlink():
            raise InitError(f"{person_policy}: exists, but regulator/policies/ did not load")
    if person_policy is not None:
        defn_root: Path | None = person_policy.parent.parent
    else:
        defn_root = defn.root
    definition_root = defn_root if defn_root is not None else shipped_policies_dir().parent
    # The person policy's directory does not exist yet: it will be in this repository.
    harness_dir = definition_root if definition_root.is_dir() else root
    harness = gitops.head(harness_dir) if gitops.toplevel(harness_dir) else None
    manifest = InstanceManifest.model_validate(
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

    people_added = None
    if person_policy is not None and by is not None:
        people_added = write_person_policy(person_policy, by, os_user())
    layout.state.mkdir(mode=0o700, exist_ok=True)
    write_text_atomic(layout.canaries, "".join(f"{value}\n" for value in canaries))
    create_json_exclusive(layout.manifest, manifest.to_json_dict())

    commit = None
    if needs_ignore:
        sep = "" if not ignore_text or ignore_text.endswith("\n") else "\n"
        gitignore.write_text(f"{ignore_text}{sep}.regulator/\n", encoding="utf-8")
        gitops.git(root, "add", "--", ".gitignore")
        gitops.git(
            root,
            *gitops.identity_args(root),
            "commit",
            "--quiet",
            "-m",
            f"regulator init: instance prepared by {manifest.initialized_by}",
            "--",
            ".gitignore",
        )
        commit = gitops.head(root)
    return InitResult(root, manifest, len(canaries), commit, people_added)


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
