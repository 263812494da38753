"""A person's own keys: a YAML file mapping binding ids to keys, applied with ``set_keymap``.

    # ~/.config/regulator/keymap.yaml  (or the file $REGULATOR_KEYMAP names)
    main.acknowledge: k          # acknowledge on k instead of c
    room.quit: q,ctrl+c

An id the room does not have, or a value that is not a key string, is an error naming the file,
the line and the id; the rest of the file still applies.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml


def keymap_path(env: dict[str, str] | None = None) -> Path:
    environ = os.environ if env is None else env
    given = environ.get("REGULATOR_KEYMAP")
    if given:
        return Path(given)
    config = environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "regulator" / "keymap.yaml"


def load_keymap(path: Path, known: set[str]) -> tuple[dict[str, str], list[str]]:
    """(the keymap, one error line per thing refused); a missing file is an empty keymap."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, []
    except OSError as exc:
        return {}, [f"{path}: cannot read: {exc.strerror or exc}"]
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        return {}, [f"{path}{where}: not YAML: {getattr(exc, 'problem', exc)}"]
    if node is None:
        return {}, []
    if not isinstance(node, yaml.MappingNode):
        return {}, [f"{path}:{node.start_mark.line + 1}: expected binding-id: keys"]
    keymap: dict[str, str] = {}
    errors: list[str] = []
    for key_node, value_node in node.value:
        line = key_node.start_mark.line + 1
        name = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
        if not isinstance(name, str) or name not in known:
            errors.append(f"{path}:{line}: {name!r}: no such binding id (see docs/room.md)")
            continue
        value = value_node.value if isinstance(value_node, yaml.ScalarNode) else None
        keys = [k.strip() for k in value.split(",")] if isinstance(value, str) else []
        if not keys or not all(keys):
            errors.append(f"{path}:{line}: {name}: expected keys such as 'k' or 'ctrl+k,f2'")
            continue
        keymap[name] = ",".join(keys)
    return keymap, errors


__all__ = ["keymap_path", "load_keymap"]
