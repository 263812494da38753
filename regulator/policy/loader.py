"""Where a definition's policies are, and loading them.

The definition an instance runs under is, in order: ``--definition DIR`` when given; else
``regulator/`` in the repository when it holds a ``policies/`` directory; else the policies this
project ships. A kind the chosen definition does not define falls back to the shipped file, and
every policy remembers the file it came from, so ``doctor`` can say which is in force.

A policy that does not validate is refused with every problem listed, each naming the file,
the line where YAML or JSON can tell it, and the field path.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from regulator.protocol.errors import CorruptState, Refused, field_path
from regulator.store._fs import kind_of

if TYPE_CHECKING:
    from regulator.protocol.policies import (
        BudgetPolicy,
        InteractionPolicy,
        RecoveryPolicy,
        RoutingPolicy,
    )

# The four policies' models are imported when one is read, not with the loader: a command that
# reads only ``agents.yaml`` (the hook answering a Read) does not build them.
POLICY_KINDS: tuple[str, ...] = ("routing", "interaction", "recovery", "budget")


def policy_model(kind: str) -> type[Any]:
    """The struct of the ``kind`` policy."""
    from regulator.protocol import policies

    models: dict[str, type[Any]] = {
        "routing": policies.RoutingPolicy,
        "interaction": policies.InteractionPolicy,
        "recovery": policies.RecoveryPolicy,
        "budget": policies.BudgetPolicy,
    }
    return models[kind]


# The original names its budget policy `default.json`; accept that name too.
_STEMS: dict[str, tuple[str, ...]] = {
    "routing": ("routing",),
    "interaction": ("interaction",),
    "recovery": ("recovery",),
    "budget": ("budget", "default"),
}
_SUFFIXES = (".yaml", ".yml", ".json")


def _yaml() -> tuple[Any, Any]:
    """PyYAML and its loader, imported when a YAML file is read: a session's snapshot keeps
    ``agents.yaml`` as checked JSON, so the hook answering a call never imports it (PyYAML
    compiles its resolvers' expressions at import, about as long as the rest of the hook).
    The C loader is several times faster where PyYAML was built with libyaml."""
    import yaml

    return yaml, getattr(yaml, "CSafeLoader", yaml.SafeLoader)


M = TypeVar("M")


class PolicyError(CorruptState):
    """A policy file that cannot be used; ``problems`` holds one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class DefinitionRefused(Refused):
    """A definition given with ``--definition`` that reads well but may not be acted under (it
    lists other people than the instance's own): refused, nothing written; act under the
    instance's own definition."""


def shipped_policies_dir() -> Path:
    """The shipped policies: inside the installed wheel, or ``policies/`` of a source checkout."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "_shipped_policies", package.parent / "policies"):
        if candidate.is_dir():
            return candidate
    raise PolicyError([f"{package}: the shipped policies are missing from this installation"])


def display_path(path: Path) -> str:
    """A path as a person would type it: relative to the working directory when inside it."""
    try:
        return os.path.relpath(path) if path.is_absolute() and _inside_cwd(path) else str(path)
    except ValueError:
        return str(path)


def _inside_cwd(path: Path) -> bool:
    try:
        path.relative_to(Path.cwd())
    except ValueError:
        return False
    return True


def _find_in(directory: Path, kind: str) -> list[Path]:
    # Whatever sits at a policy's name counts as that policy, a FIFO, a directory or a dangling
    # symlink too: loading it then refuses it by name, instead of falling back to the shipped
    # policy (and its people) as if the file were not there.
    return [
        directory / f"{stem}{suffix}"
        for stem in _STEMS[kind]
        for suffix in _SUFFIXES
        if os.path.lexists(directory / f"{stem}{suffix}")
    ]


def check_directory(path: Path, what: str) -> None:
    """Refuse anything but a directory (or nothing) at ``path``: never a silent fallback."""
    if os.path.lexists(path) and not path.is_dir():
        raise PolicyError([f"{display_path(path)}: {_not_a(path, 'directory')}; {what}"])


def _not_a(path: Path, wanted: str) -> str:
    try:
        mode = path.lstat().st_mode
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if stat.S_ISLNK(mode):
        try:
            target = path.stat().st_mode
        except OSError:
            return f"is a symlink to nothing (to {path.readlink()})"
        return f"is a symlink to {kind_of(target)}, not a {wanted}"
    return f"is {kind_of(mode)}, not a {wanted}"


def read_definition_text(path: Path) -> str:
    """A definition file's text, refusing what is not a regular file without blocking on it.

    A symlink to a regular file is followed: the definition lives above ``.regulator/`` and is
    its author's to arrange (``doctor`` notes where it points). A FIFO is opened non-blocking
    and refused, never waited on.
    """
    shown = display_path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise PolicyError([f"{shown}: {_not_a(path, 'regular file')}"]) from None
    except OSError as exc:
        raise PolicyError([f"{shown}: cannot read: {exc.strerror or exc}"]) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PolicyError([f"{shown}: {_not_a(path, 'regular file')}"])
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    except OSError as exc:
        raise PolicyError([f"{shown}: cannot read: {exc.strerror or exc}"]) from None
    finally:
        os.close(fd)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PolicyError([f"{shown}: invalid UTF-8 at byte {exc.start + 1}"]) from None


def symlink_note(path: Path) -> str | None:
    """``"is a symlink to TARGET"`` when a definition file is one, for ``doctor``'s notices."""
    try:
        if not path.is_symlink():
            return None
        return f"{display_path(path)} is a symlink to {path.resolve()}"
    except (OSError, RuntimeError):
        return None


def _line_of(text: str, loc: tuple[int | str, ...]) -> int | None:
    """The 1-based line of the node at ``loc`` in a YAML (or JSON) text, or its nearest parent's."""
    yaml, loader = _yaml()
    try:
        node: Any = yaml.compose(text, Loader=loader)
    except yaml.YAMLError:
        return None
    line = None if node is None else node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if getattr(k, "value", None) == part), None)
            if match is None:
                # An unknown key: point at the key itself when it exists.
                key = next((k for k, _ in node.value if getattr(k, "value", None) == part), None)
                return key.start_mark.line + 1 if key is not None else line
            node = match
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                return line
            node = node.value[part]
        else:
            return line
        line = node.start_mark.line + 1
    return line


def read_definition_data(kind: str, path: Path) -> tuple[str, dict[str, Any]]:
    """A definition file's text and its mapping (JSON for ``.json``, else YAML)."""
    shown = display_path(path)
    text = read_definition_text(path)
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PolicyError([f"{shown}:{exc.lineno}: not valid JSON: {exc.msg}"]) from None
        return text, _mapping(kind, shown, data)
    yaml, loader = _yaml()
    try:
        data = yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{shown}:{mark.line + 1}" if mark is not None else shown
        problem = getattr(exc, "problem", None) or str(exc)
        raise PolicyError([f"{where}: not valid YAML: {problem}"]) from None
    return text, _mapping(kind, shown, data)


def _mapping(kind: str, shown: str, data: object) -> dict[str, Any]:
    if not isinstance(data, dict):
        what = f"a {kind} policy" if kind in POLICY_KINDS else f"a {kind} file"
        raise PolicyError([f"{shown}: {what} is a mapping of fields, not {_kind(data)}"])
    return data


def problem_at(path: Path, text: str, loc: tuple[int | str, ...], message: str) -> str:
    """``FILE:LINE: message``, the line being the node at ``loc`` when the text places it."""
    line = _line_of(text, loc)
    shown = display_path(path)
    return f"{shown}:{line}: {message}" if line else f"{shown}: {message}"


def load_policy_file(
    kind: str,
    path: Path,
    model: type[M],
    *,
    text: str | None = None,
    data: dict[str, Any] | None = None,
) -> M:
    """Load and check one definition file as ``model`` (a policy's msgspec struct, or the
    pydantic model of a workload or profile); every problem is raised at once in a
    PolicyError. ``text`` and ``data``: the file as already read (by
    :func:`read_definition_data`)."""
    import msgspec

    if text is None or data is None:
        text, data = read_definition_data(kind, path)
    if issubclass(model, msgspec.Struct):
        try:
            checked: M = msgspec.convert(data, model, strict=True)
            return checked
        except msgspec.ValidationError:
            from regulator.protocol.entry import every_refusal

            raise refused(path, text, every_refusal(model, data)) from None
    from pydantic import ValidationError

    from regulator.protocol.errors import describe_validation_error

    try:
        validated: M = model.model_validate(data)  # type: ignore[attr-defined]
        return validated
    except ValidationError as exc:
        problems = [
            problem_at(path, text, loc, message) for loc, message in describe_validation_error(exc)
        ]
        raise PolicyError(problems) from None


def refused(
    path: Path, text: str, problems: Iterable[tuple[tuple[int | str, ...], str]]
) -> PolicyError:
    """A file's problems, each as (location, why), as one PolicyError: a line each, naming the
    file, the line where the text places it, and the field path."""
    return PolicyError(
        [
            problem_at(path, text, loc, f"{field_path(loc)}: {why}" if loc else why)
            for loc, why in problems
        ]
    )


def _kind(data: object) -> str:
    return "nothing" if data is None else f"a {type(data).__name__}"


@dataclass
class Definition:
    """The policies an instance runs under, loaded on first use and then kept."""

    root: Path | None  # None: the shipped definition
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def policies_dir(self) -> Path:
        return self.root / "policies" if self.root is not None else shipped_policies_dir()

    def source(self, kind: str) -> Path:
        """The file the policy of ``kind`` is read from (refusing an ambiguous definition)."""
        found: list[Path] = []
        if self.root is not None:
            check_directory(self.policies_dir, "a definition's policies/ is a directory")
            found = _find_in(self.policies_dir, kind)
        if len(found) > 1:
            names = ", ".join(display_path(p) for p in found)
            raise PolicyError([f"{names}: more than one file defines the {kind} policy"])
        if found:
            return found[0]
        shipped = _find_in(shipped_policies_dir(), kind)
        if not shipped:
            raise PolicyError([f"{shipped_policies_dir()}: no shipped {kind} policy"])
        return shipped[0]

    def is_shipped(self, kind: str) -> bool:
        return self.source(kind).parent == shipped_policies_dir()

    def _get(self, kind: str, model: type[M]) -> M:
        cached = self._cache.get(kind)
        if cached is None:
            cached = load_policy_file(kind, self.source(kind), model)
            self._cache[kind] = cached
        assert isinstance(cached, model)
        return cached

    @property
    def routing(self) -> RoutingPolicy:
        from regulator.protocol.policies import RoutingPolicy

        return self._get("routing", RoutingPolicy)

    @property
    def interaction(self) -> InteractionPolicy:
        from regulator.protocol.policies import InteractionPolicy

        return self._get("interaction", InteractionPolicy)

    @property
    def recovery(self) -> RecoveryPolicy:
        from regulator.protocol.policies import RecoveryPolicy

        return self._get("recovery", RecoveryPolicy)

    @property
    def budget(self) -> BudgetPolicy:
        from regulator.protocol.policies import BudgetPolicy

        return self._get("budget", BudgetPolicy)

    def check(self) -> dict[str, list[str]]:
        """Load every policy; per kind, the problems (empty when it loaded)."""
        result: dict[str, list[str]] = {}
        for kind in POLICY_KINDS:
            try:
                self._get(kind, policy_model(kind))
                result[kind] = []
            except PolicyError as exc:
                result[kind] = exc.problems
        return result


def load_definition(instance_root: Path | None, override: Path | None = None) -> Definition:
    """The definition in force for an instance (see the module's docstring for the order)."""
    if override is not None:
        if not override.is_dir():
            raise PolicyError([f"{display_path(override)}: --definition is not a directory"])
        return Definition(override.resolve())
    if instance_root is not None:
        policies = instance_root / "regulator" / "policies"
        check_directory(policies, "the repository's definition keeps its policies there")
        if policies.is_dir():
            return Definition((instance_root / "regulator").resolve())
    return Definition(None)


def acting_people_check(definition: Definition, instance_root: Path | None) -> None:
    """Refuse a definition whose people are not the instance's own.

    ``--definition`` may bring other policies, but not other people: otherwise a person could
    grant themselves ``actAsS5`` or a higher ``resolveUpTo`` in a directory of their own and act
    under it (a second definition must not launder what the instance does not allow).
    """
    own = load_definition(instance_root)
    if own.root == definition.root:
        return
    mine = list(own.interaction.people)
    theirs = list(definition.interaction.people)
    if mine != theirs:
        raise DefinitionRefused(
            f"{display_path(definition.source('interaction'))}: lists other people than "
            f"the instance's own {display_path(own.source('interaction'))}; a person acts "
            "under the instance's own people, whatever --definition brings"
        )
