"""The ``regulator`` console script: the hook's own command line answered first.

Claude Code runs ``regulator hook claude-code`` before every tool call it matches, as a whole
process, so every millisecond of its start is latency on the agent's call. That exact command
line, which ``regulator agent install`` writes, is dispatched here without argparse (its import
and the hook parser's construction are a sixth of the hook's start); any other, the hook with
a flag or ``--help`` included, goes to :mod:`regulator.cli.main`, which parses it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

#: The command line ``agent install`` writes into Claude Code's settings.
HOOK_ARGV = ("hook", "claude-code")


def main(argv: Sequence[str] | None = None) -> int:
    given = tuple(sys.argv[1:] if argv is None else argv)
    if given == HOOK_ARGV:
        from regulator.cli.hook_cmds import answer_hook

        try:
            return answer_hook(definition_dir=None)
        except KeyboardInterrupt:
            return 130
    from regulator.cli.main import main as parse_and_run

    return parse_and_run(given)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
