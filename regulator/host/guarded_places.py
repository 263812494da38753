"""Where what governs an agent lives, for one instance: the places a write needs consent for.

Computed here, where git and the home directory may be asked; checked by
:mod:`regulator.policy.agent_guard`, which is pure. The list is code, not policy: a definition
cannot shorten it.

- regulator's definition: ``regulator/policies``, ``regulator/workload[.*]``,
  ``regulator/profiles``, ``regulator/agents.*``, ``regulator/identity`` in the repository; the
  definition's directory when it is elsewhere (``--definition``); the shipped policies, which
  fill in whatever the definition lacks; regulator's own code;
- the instance's state, ``.regulator/``, except the worktree of the unit the call runs for
  (``.regulator/worktrees/<unit>/``, the agent's own workspace), inside which the places of
  this list stay guarded;
- the agents' configuration: ``.claude/``, ``.mcp.json``, ``.codex/`` in the repository;
  ``~/.claude/``, ``~/.claude.json``, ``~/.codex/`` (and ``$CLAUDE_CONFIG_DIR``, ``$CODEX_HOME``);
- git's hooks and configuration: ``.git/``, the ``core.hooksPath`` directory when set,
  ``~/.gitconfig`` and ``~/.config/git/``;
- the Python environment regulator runs in: its interpreter's scripts, standard library and
  site-packages (a ``.pth`` file there runs code in every hook; a ``.venv`` in the repository
  is written like any other directory otherwise).

The unit is the one whose worktree holds the agent's working directory (Claude Code's ``cwd``),
not one an environment variable names.
"""

from __future__ import annotations

import os
import site
import sysconfig
from collections.abc import Mapping
from pathlib import Path

import regulator
from regulator.host.gitops import GitError, git
from regulator.policy import Definition
from regulator.policy.agent_guard import GuardedPlaces, Place
from regulator.policy.loader import shipped_policies_dir
from regulator.store import Layout
from regulator.store.layout import is_valid_unit_id

DEFINITION = "regulator's definition"
STATE = "the instance's state"
CLAUDE = "Claude Code's configuration"
CODEX = "Codex's configuration"
MCP = "the agents' MCP servers"
GIT = "git's hooks and configuration"


def own_worktree(layout: Layout, cwd: Path) -> Path | None:
    """The worktree of the unit the agent works in, when ``cwd`` lies in one."""
    worktrees = os.path.realpath(layout.worktrees_dir)
    here = os.path.realpath(cwd)
    try:
        relative = Path(here).relative_to(worktrees)
    except ValueError:
        return None
    unit = relative.parts[0] if relative.parts else ""
    return Path(worktrees, unit) if is_valid_unit_id(unit) else None


def _home(env: Mapping[str, str]) -> Path | None:
    home = env.get("HOME")
    if home:
        return Path(home)
    try:
        return Path.home()
    except RuntimeError:
        return None


def _checkout_places(base: Path) -> list[Place]:
    """The places of one checkout (the repository's own, or a unit's worktree), but its state."""
    definition = base / "regulator"
    return [
        Place(definition / "policies", DEFINITION),
        Place(definition / "workload", DEFINITION, stem=True),
        Place(definition / "profiles", DEFINITION),
        Place(definition / "agents", DEFINITION, stem=True),
        Place(definition / "identity", DEFINITION),
        Place(base / ".claude", CLAUDE),
        Place(base / ".mcp.json", MCP),
        Place(base / ".codex", CODEX),
        Place(base / ".git", GIT),
    ]


def _hooks_path(checkout: Path) -> Path | None:
    """The directory of ``core.hooksPath`` as git resolves it for ``checkout``, if set."""
    try:
        done = git(checkout, "config", "--type=path", "--get", "core.hooksPath", check=False)
    except (GitError, OSError):
        return None
    value = done.stdout.strip()
    if done.returncode != 0 or not value:
        return None
    return Path(checkout, value)  # a relative value is relative to where the hooks run


def guarded_places(
    layout: Layout, definition: Definition, cwd: Path, env: Mapping[str, str] | None = None
) -> GuardedPlaces:
    """What governs an agent working in ``cwd`` on this instance (see the module's docstring)."""
    env = os.environ if env is None else env
    root = layout.root
    worktree = own_worktree(layout, cwd)
    # The state, minus the agent's own worktree; the places inside that stay guarded.
    places = [*_checkout_places(root), Place(layout.state, STATE, except_under=worktree)]
    if worktree is not None:
        places += [*_checkout_places(worktree), Place(worktree / ".regulator", STATE)]
    if definition.root is not None and not _inside(definition.root, root / "regulator"):
        places.append(Place(definition.root, DEFINITION))
    places.append(Place(shipped_policies_dir(), DEFINITION))
    places.append(Place(Path(regulator.__file__).parent, "regulator's own code"))
    places += [Place(p, "the Python environment regulator runs in") for p in _environment()]
    for checkout in (root, worktree):
        if checkout is not None and (hooks := _hooks_path(checkout)) is not None:
            places.append(Place(hooks, "git's hooks"))
    home = _home(env)
    if home is not None:
        places += [
            Place(home / ".claude", CLAUDE, stem=True),  # ~/.claude/ and ~/.claude.json
            Place(home / ".codex", CODEX),
            Place(home / ".gitconfig", "git's configuration"),
        ]
        config_home = env.get("XDG_CONFIG_HOME") or str(home / ".config")
        places.append(Place(Path(config_home, "git"), "git's configuration"))
    for variable, label in (("CLAUDE_CONFIG_DIR", CLAUDE), ("CODEX_HOME", CODEX)):
        if env.get(variable):
            places.append(Place(Path(env[variable]), label))
    bases = [b for b in (root, worktree, home) if b is not None]
    return GuardedPlaces(places, repository=root, home=home, bases=bases)


def _environment() -> list[Path]:
    """The directories whose code the interpreter running regulator loads or runs."""
    paths = sysconfig.get_paths()
    found = [paths[k] for k in ("scripts", "stdlib", "platstdlib", "purelib", "platlib")]
    if site.ENABLE_USER_SITE:
        found.append(site.getusersitepackages())
    return [Path(p) for p in dict.fromkeys(found) if p]


def _inside(path: Path, directory: Path) -> bool:
    try:
        Path(os.path.realpath(path)).relative_to(os.path.realpath(directory))
    except ValueError:
        return False
    return True
