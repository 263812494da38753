"""The CLI reference, generated from the parser itself so it cannot drift from ``--help``.

``python -m regulator.cli.reference > docs/cli.md`` rewrites it; a test fails when the file
and the parser disagree.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator

from regulator.cli.main import build_parser

WIDTH = "100"

INTRO = """# The `regulator` command

Generated from the command's own parser by `python -m regulator.cli.reference`; every section
is exactly what `--help` prints. Conventions that hold for every command:

- The instance is the nearest directory upward holding `.regulator/`, or `--instance DIR`.
- The definition is `--definition DIR`, else `regulator/` in the repository when it holds
  `policies/`, else the shipped policies.
- Exit statuses (`regulator.cli.errors.EXIT_STATUS`, the one table), each error with
  `regulator: <message>` on stderr naming its file, field or argument:
  - 0: done.
  - 1: refused: a person or an agent may not do this, or asked it wrongly; nothing was written,
    asking differently may succeed. Also a command's own "no" (`doctor` found a problem, `ask`
    was answered no, `unit drive` did not close the unit).
  - 2: bad usage, with the usage line.
  - 3: `regulator ask` only: nobody answered.
  - 4: corrupt state: a record, log or definition file does not read as it should; mend the
    file named, the request was fine.
  - 5: a host failure: git, a process, a worktree, a lease another unit holds, the file system;
    nothing is wrong with the request or the records, later or elsewhere may succeed.
  - 130: interrupted. A closed stdout pipe exits 0, quietly.
- `--flag value` and `--flag=value` both work; obligation ids may be a unique prefix.
- Read commands take `--json` and then print JSON only, in the on-disk camelCase shapes.
- The acts on an obligation (`answer`, `obligation ack|resolve|escalate`, `identity
  accept|reject`) and `memory retract` take `--json` too: one object saying what was done
  (docs/triage.md). A refusal with `--json` is what it is without: the `regulator: <message>`
  line on stderr, its exit code, and nothing on stdout.
"""


def _walk(parser: argparse.ArgumentParser, path: list[str]) -> Iterator[tuple[list[str], str]]:
    yield path, parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, [*path, name])


def render() -> str:
    os.environ["COLUMNS"] = WIDTH  # argparse wraps to the terminal; make it deterministic
    out = [INTRO]
    for path, text in _walk(build_parser(), ["regulator"]):
        out.append(f"\n## `{' '.join(path)}`\n\n```\n{text.rstrip()}\n```\n")
    return "".join(out)


if __name__ == "__main__":
    sys.stdout.write(render())
