"""What every command needs: the instance and its definition (``main`` maps every error)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from regulator.cli.errors import CliError
from regulator.protocol.text import inert_json
from regulator.store import Layout, find_instance

if TYPE_CHECKING:
    import argparse

    # Imported when a command asks for its definition: loading the policy models costs a
    # tenth of a second that `obligations` and `status --json`'s fold do not need to wait on.
    from regulator.policy import Definition
    from regulator.views.redaction import Redactor


def instance_root(args: argparse.Namespace) -> Path:
    """The instance named by ``--instance``, else the nearest one upward from here."""
    given = getattr(args, "instance", None)
    if given is not None:
        root = Path(given)
        if not (root / ".regulator").is_dir():
            raise CliError(f"{given}: not an instance (no .regulator/ there; run `regulator init`)")
        return root.resolve()
    found = find_instance(Path.cwd())
    if found is None:
        raise CliError(
            f"{Path.cwd()}: no instance here or above (no .regulator/); "
            "run `regulator init` or pass --instance DIR"
        )
    return found


def layout(args: argparse.Namespace) -> Layout:
    return Layout(instance_root(args))


def redactor(root: Path) -> Redactor:
    """The instance's redactor, which every record text a command prints goes through: an
    agent may have copied a canary, a credential or a channel's secret into a subject."""
    from regulator.views.redaction import Redactor

    return Redactor.for_layout(Layout(root))


def definition(args: argparse.Namespace, root: Path | None) -> Definition:
    from regulator.policy import load_definition

    override = getattr(args, "definition", None)
    return load_definition(root, Path(override) if override is not None else None)


def acting_definition(args: argparse.Namespace, root: Path) -> Definition:
    """The definition a person acts under: ``--definition`` may not bring other people."""
    from regulator.policy.loader import acting_people_check

    defn = definition(args, root)
    acting_people_check(defn, root)
    return defn


def print_json(value: Any) -> None:
    """JSON for machines: the same data, but a bidi override or an escape sequence in a string
    is written as a ``\\uNNNN`` escape, so even a person paging through it sees it inert.

    Encoded by orjson (a status of 100,000 obligations is tens of megabytes); what orjson
    refuses (a lone surrogate, a non-string key, a huge int) takes the stdlib path as before.
    """
    import orjson

    from regulator.protocol.text import inert_json_bytes

    try:
        encoded = orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    except (orjson.JSONEncodeError, TypeError):
        sys.stdout.write(inert_json(value) + "\n")
        return
    # orjson escapes the C0 controls; DEL and anything beyond ASCII are the escape step's.
    if not encoded.isascii() or b"\x7f" in encoded:
        encoded = inert_json_bytes(encoded)
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(encoded.decode())
        return
    sys.stdout.flush()
    buffer.write(encoded)
    buffer.flush()


def print_done(root: Path, value: dict[str, Any]) -> None:
    """What an act did, as the one JSON object ``--json`` prints on stdout (docs/triage.md),
    redacted as every record a command prints is. A refusal never reaches here."""
    print_json(redactor(root).redact_json(value))


def emit_json(value: Any) -> None:
    """One line of compact JSON, for an agent reading a command's reply; a bidi override or
    zero-width character in a string is written as an escape, so a person running it from a
    shell sees it inert."""
    import orjson

    from regulator.protocol.text import inert_json_text

    sys.stdout.write(inert_json_text(orjson.dumps(value).decode()) + "\n")
