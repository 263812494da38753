"""The ``regulator`` command: argument parsing and dispatch.

Parsing is all this module does. Each command's implementation lives in its own module and is
imported only when that command runs, so ``regulator --help`` stays fast and no command but
``room`` ever imports Textual.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from regulator import __version__

Handler = Callable[[argparse.Namespace], int]


class CliError(Exception):
    """A refusal or error: printed as ``regulator: <message>``, exit 1."""


class UsageError(Exception):
    """Bad usage found after parsing: printed with the usage line, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own: usage + message, exit 2
        self.print_usage(sys.stderr)
        self.exit(2, f"regulator: {message}\n")


def _common(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("instance")
    group.add_argument(
        "--instance",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="the instance (default: the nearest directory upward holding .regulator/)",
    )
    group.add_argument(
        "--definition",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="the definition whose policies/ to use (default: regulator/ in the repository, "
        "else the shipped policies)",
    )


def _command(
    subparsers: Any,
    name: str,
    handler: str,
    help_text: str,
    example: str,
    *,
    common: bool = True,
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=help_text,
        description=help_text,
        epilog=f"example:\n  {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(_handler=handler, _parser=parser)
    if common:
        _common(parser)
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="regulator",
        description="A control plane for agentic software development, after Beer's Viable "
        "System Model: units run under contracts, failures are routed by policy, and what "
        "the loop cannot absorb is owed to S3, S5 or a person.",
        epilog="example:\n  regulator init && regulator status\n\n"
        "Every command has --help. Design: docs/ in the project.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"regulator {__version__}")
    sub = parser.add_subparsers(metavar="COMMAND", title="commands", parser_class=_Parser)

    p = _command(
        sub,
        "init",
        "regulator.cli.instance_cmds:cmd_init",
        "make a git repository an instance: .regulator/ with its manifest and canaries",
        "regulator init . --by alice",
    )
    p.add_argument(
        "dir", nargs="?", default=".", metavar="DIR", help="a directory in the repository"
    )
    p.add_argument("--by", metavar="WHO", help="who initializes it (default: user@host)")

    p = _command(
        sub,
        "doctor",
        "regulator.cli.instance_cmds:cmd_doctor",
        "check the manifest, the definition, every policy and every log; exit 1 on a problem",
        "regulator doctor --json",
    )
    p.add_argument("--json", action="store_true", help="print the checks as JSON")

    p = _command(
        sub,
        "status",
        "regulator.cli.instance_cmds:cmd_status",
        "what the instance holds: units, obligations, unrouted messages, problems",
        "regulator status --json",
    )
    p.add_argument("--json", action="store_true", help="print the read model as JSON")
    return parser


def _run(handler_path: str, args: argparse.Namespace) -> int:
    module_name, _, function = handler_path.partition(":")
    handler: Handler = getattr(importlib.import_module(module_name), function)
    return handler(args)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        # Report a stray argument with the usage of the command it was given to.
        getattr(args, "_parser", parser).error(f"unrecognized arguments: {' '.join(extra)}")
    handler = getattr(args, "_handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return _run(handler, args)
    except UsageError as exc:
        args._parser.print_usage(sys.stderr)
        print(f"regulator: {exc}", file=sys.stderr)
        return 2
    except CliError as exc:
        for line in str(exc).splitlines() or [""]:
            print(f"regulator: {line}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # `regulator obligations | head`: the reader went away; leave quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
