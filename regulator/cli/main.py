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
from regulator.cli.errors import UsageError, exit_status
from regulator.protocol.errors import RegulatorError, message_of
from regulator.protocol.text import visible

Handler = Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own: usage + message, exit 2
        self.print_usage(sys.stderr)
        self.exit(2, f"regulator: {visible(message)}\n")  # it may quote what was typed


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


def _hook_command(sub: Any) -> None:
    p = _command(
        sub,
        "hook",
        "regulator.cli.hook_cmds:cmd_hook",
        "answer an agent's hook: a payload on stdin, the agent's reply on stdout",
        "regulator hook claude-code < payload.json",
    )
    p.add_argument("agent", choices=["claude-code"], help="which agent's hook format")


class _Skipped:
    """What a command the command line does not name is built into: nothing, whatever is
    asked of it (an argument, a group, subcommands)."""

    def __getattr__(self, name: str) -> Callable[..., _Skipped]:
        return self._nothing

    def _nothing(self, *args: Any, **kwargs: Any) -> _Skipped:
        return self


class _Only:
    """The commands' subparsers, building only the command named ``name`` (with its actions):
    a command runs without the cost of building the others' (some 15 ms)."""

    def __init__(self, sub: Any, name: str) -> None:
        self.sub = sub
        self.name = name
        self.found = False

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if name != self.name:
            return _Skipped()
        self.found = True
        return self.sub.add_parser(name, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    """The whole command line's parser."""
    parser = _parser_of(None)
    assert parser is not None
    return parser


def _parser_of(only: str | None) -> argparse.ArgumentParser | None:
    """The command line's parser; with ``only``, one that knows that command alone (None when
    there is no such command)."""
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
    sub: Any = parser.add_subparsers(metavar="COMMAND", title="commands", parser_class=_Parser)
    if only is not None:
        sub = _Only(sub, only)

    p = _command(
        sub,
        "init",
        "regulator.cli.instance_cmds:cmd_init",
        "make a git repository an instance: .regulator/ with its manifest and canaries, and "
        "where it has none, an interaction policy naming only you",
        "regulator init . --by carol",
    )
    p.add_argument(
        "dir", nargs="?", default=".", metavar="DIR", help="a directory in the repository"
    )
    p.add_argument(
        "--by",
        metavar="NAME",
        help="you, as the interaction policy names you; where the repository has no policy, "
        "init writes one naming only NAME, pinned to your OS user (default: your OS user)",
    )

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

    p = _command(
        sub,
        "demo",
        "regulator.cli.instance_cmds:cmd_demo",
        "make a demo instance: a small project with units in every state, all by the real loop",
        "regulator demo /tmp/regulator-demo && regulator status --instance /tmp/regulator-demo",
        common=False,
    )
    p.add_argument("dir", metavar="DIR", help="a new or empty directory")
    p.add_argument("--live", action="store_true", help="keep going: new units ask questions")

    p = _command(
        sub,
        "room",
        "regulator.cli.room_cmds:cmd_room",
        "the control room: live instances, an inbox of what is owed, dialogs, the inspector",
        "regulator room --as alice    (or: regulator room --demo)",
        common=False,
    )
    p.add_argument(
        "instances",
        nargs="*",
        metavar="INSTANCE",
        help=(
            "instances to open (default: this one): a directory, or ssh://[user@]host[:port]/path"
            " for an instance on another machine, followed over ssh"
        ),
    )
    p.add_argument(
        "--as",
        dest="person",
        metavar="PERSON",
        help="who is acting (default: $REGULATOR_PERSON, else the OS user when listed)",
    )
    p.add_argument(
        "--demo",
        action="store_true",
        help="build a live demo instance in a temporary directory and open it",
    )
    p.add_argument(
        "--no-bell", action="store_true", help="no terminal bell when something blocking arrives"
    )
    p.add_argument(
        "--definition", metavar="DIR", default=argparse.SUPPRESS, help="the definition to use"
    )

    _obligation_commands(sub)
    _delivery_commands(sub)
    _reach_commands(sub)
    _memory_identity_commands(sub)
    _unit_commands(sub)
    _agent_commands(sub)
    if isinstance(sub, _Only) and not sub.found:
        return None
    return parser


def _agent_commands(sub: Any) -> None:
    h = "regulator.cli.agent_cmds"
    _command(
        sub,
        "mcp",
        f"{h}:cmd_mcp",
        "the session tools as an MCP server on stdio, for the unit in $REGULATOR_UNIT",
        "REGULATOR_UNIT=u1 REGULATOR_ATTEMPT=1 regulator mcp",
    )
    p = _command(
        sub,
        "tool",
        f"{h}:cmd_tool",
        "call one session tool from a shell: JSON arguments in, JSON result out "
        "(exit 1 on a refusal)",
        "echo '{}' | REGULATOR_UNIT=u1 regulator tool read_conventions",
    )
    p.add_argument("name", metavar="NAME", help="the tool: ask_human, report_result, …")
    p.add_argument("--json", metavar="JSON", help="the arguments as a JSON object (default: stdin)")
    p = _command(
        sub,
        "ask",
        f"{h}:cmd_ask",
        "ask a person from a shell and wait while one is in the room: exit 0 on yes or an "
        "answer, 1 on no, 3 when nobody answered",
        "regulator ask --kind consent --subject deploy --question 'Deploy 1.4 now?' "
        "--action 'deploy 1.4 to production'",
    )
    p.add_argument(
        "--kind",
        required=True,
        choices=["consent", "choice", "clarification", "uat", "recap"],
        help="what kind of question (only a recap lets the work go on unanswered)",
    )
    p.add_argument("--subject", required=True, metavar="S", help="what it is about")
    p.add_argument("--question", required=True, metavar="Q", help="the question itself")
    p.add_argument("--action", metavar="A", help="for consent: the action a yes authorizes")
    p.add_argument(
        "--option", action="append", metavar="O", help="for a choice: an option (two to six)"
    )
    p.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="wait at most this long (never longer than the kind's timeout in the policy)",
    )
    p.add_argument("--json", action="store_true", help="print the whole result as JSON")
    _hook_command(sub)
    ses = sub.add_parser(
        "session",
        help="open or end the session unit of an agent a person runs by hand",
        description="open or end the session unit of an agent a person runs by hand",
    )
    ses.set_defaults(_parser=ses)
    sess = ses.add_subparsers(metavar="ACTION", title="actions", parser_class=_Parser)
    p = _command(
        sess,
        "start",
        f"{h}:cmd_session_start",
        "open (or join) a session unit and print its id",
        "export REGULATOR_SESSION=nightly && regulator session start",
    )
    p.add_argument("--key", metavar="KEY", help="the session's key (default: $REGULATOR_SESSION)")
    p.add_argument("--agent", default="shell", metavar="NAME", help="who runs in it")
    p = _command(
        sess,
        "end",
        f"{h}:cmd_session_end",
        "end a session unit: closed, or blocked while a question it asked is owed",
        "regulator session end --key nightly",
    )
    p.add_argument("unit", nargs="?", metavar="UNIT", help="the session unit (default: by key)")
    p.add_argument("--key", metavar="KEY", help="the session's key (default: $REGULATOR_SESSION)")
    agent = sub.add_parser(
        "agent",
        help="wire an agent in this repository to regulator: MCP server and hooks",
        description="wire an agent in this repository to regulator: MCP server and hooks",
    )
    agent.set_defaults(_parser=agent)
    agents = agent.add_subparsers(metavar="ACTION", title="actions", parser_class=_Parser)
    p = _command(
        agents,
        "install",
        f"{h}:cmd_agent_install",
        "write or merge the agent's MCP and hook configuration, never overwriting an entry",
        "regulator agent install claude-code --dry-run",
    )
    p.add_argument("agent", choices=["claude-code", "codex"], help="which agent")
    p.add_argument("--dry-run", action="store_true", help="show the change, write nothing")
    p.add_argument(
        "--command",
        metavar="CMD",
        help=(
            "how the agent runs regulator: an absolute path, with its arguments "
            "(default: this Python, `python -P -m regulator`)"
        ),
    )


def _unit_commands(sub: Any) -> None:
    h = "regulator.cli.unit_cmds"
    unit = sub.add_parser(
        "unit",
        help="run units: drive, dispatch, route, close; show, status, accept, evidence",
        description="run units under their contracts and read what happened to them",
    )
    unit.set_defaults(_parser=unit)
    us = unit.add_subparsers(metavar="ACTION", title="actions", parser_class=_Parser)
    script_help = "run the unit's sessions from this YAML scenario (a scripted session)"
    accept_help = (
        "accept, for this run, what regulator does not enforce of the unit's type (the "
        "original's checks and tool limits); the closeout's verdict records it"
    )
    p = _command(
        us,
        "drive",
        f"{h}:cmd_drive",
        "run a unit end to end: dispatch, verify, route, close; retry and repair applied",
        "regulator unit drive contract.json --script scenario.yaml",
    )
    p.add_argument("contract", metavar="CONTRACT", help="the work contract (JSON)")
    p.add_argument("--script", metavar="FILE", help=script_help)
    p.add_argument("--accept-unenforced", action="store_true", help=accept_help)
    _act_json(p)
    p = _command(
        us,
        "dispatch",
        f"{h}:cmd_dispatch",
        "run one attempt of a unit under its contract",
        "regulator unit dispatch contract.json --script scenario.yaml",
    )
    p.add_argument("contract", metavar="CONTRACT", help="the work contract (JSON)")
    p.add_argument("--script", metavar="FILE", help=script_help)
    p.add_argument("--accept-unenforced", action="store_true", help=accept_help)
    _act_json(p)
    for name, handler, text, example in (
        (
            "route",
            "cmd_route",
            "ask the recovery policy what to do with a blocked unit",
            "regulator unit route u1",
        ),
        (
            "close",
            "cmd_close",
            "audit a unit's committed work again and close it on a pass",
            "regulator unit close u1",
        ),
        (
            "show",
            "cmd_show",
            "a unit: attempts, budgets, decisions, report, audit, obligations",
            "regulator unit show u1",
        ),
        (
            "evidence",
            "cmd_evidence",
            "a unit's S3* evidence, acceptances and verdicts",
            "regulator unit evidence u1",
        ),
    ):
        p = _command(us, name, f"{h}:{handler}", text, example)
        p.add_argument("id", metavar="UNIT", help="the unit id")
        if name == "close":
            p.add_argument("--accept-unenforced", action="store_true", help=accept_help)
        if name in ("route", "close"):
            _act_json(p)
    _command(
        us,
        "status",
        f"{h}:cmd_status",
        "every lease: live or expired, owner, branch, until",
        "regulator unit status",
    )
    p = _command(
        us,
        "accept",
        f"{h}:cmd_accept",
        "accept (or --reject) an expectation no check can observe, at the unit's revision",
        "regulator unit accept u1 ui-looks-right --by alice --note 'checked on staging'",
    )
    p.add_argument("id", metavar="UNIT", help="the unit id")
    p.add_argument("criterion", metavar="CRITERION", help="an expected-evidence id of the contract")
    _by(p)
    p.add_argument("--reject", action="store_true", help="record a rejection instead")
    p.add_argument("--note", metavar="TEXT", help="an optional note")
    _act_json(p)
    no_drive = "only record it; do not drive the unit again"
    p = _command(
        us,
        "replan",
        f"{h}:cmd_replan",
        "write a blocked unit's next contract version and resolve its replan decision",
        "regulator unit replan u1 --contract u1.v2.json --by alice --reason 'split the parser'",
    )
    p.add_argument("id", metavar="UNIT", help="the unit id")
    p.add_argument(
        "--contract",
        metavar="FILE",
        required=True,
        help="the new contract (JSON): the next version, or the current one edited",
    )
    _by(p)
    p.add_argument("--reason", metavar="TEXT", help="why (provenance.predecessor.reason)")
    p.add_argument("--script", metavar="FILE", help=script_help)
    p.add_argument("--no-drive", action="store_true", help=no_drive)
    p.add_argument("--accept-unenforced", action="store_true", help=accept_help)
    _act_json(p)
    p = _command(
        us,
        "remediate",
        f"{h}:cmd_remediate",
        "record what was remediated for a unit waiting on remediate, then drive it again",
        "regulator unit remediate docs --by alice --note 'mkdocs installed' --run 'mkdocs -V'",
    )
    p.add_argument("id", metavar="UNIT", help="the unit id")
    _by(p)
    p.add_argument("--note", metavar="TEXT", required=True, help="what was remediated")
    p.add_argument(
        "--run",
        metavar="CMD",
        help="a command that shows it (run in the unit's worktree; must exit 0)",
    )
    p.add_argument("--script", metavar="FILE", help=script_help)
    p.add_argument("--no-drive", action="store_true", help=no_drive)
    p.add_argument("--accept-unenforced", action="store_true", help=accept_help)
    _act_json(p)


PERSON_ENV = "REGULATOR_PERSON"


def _by(parser: argparse.ArgumentParser) -> None:
    """The command is a person's act: it takes ``--by``, and is refused inside an agent."""
    parser.add_argument(
        "--by",
        metavar="WHO",
        help=f"the person acting, as the policy names them (default: ${PERSON_ENV})",
    )
    parser.set_defaults(_person_act=True)


def _not_inside_agent(args: argparse.Namespace) -> None:
    """A person's act is refused from inside an agent's session, before anything is read or
    written: every command that takes ``--by`` passes here (docs/agents.md), and so does a drive
    with ``--accept-unenforced``, which is a person saying that gates may go unenforced."""
    if not getattr(args, "_person_act", False) and not getattr(args, "accept_unenforced", False):
        return
    from regulator.cli.context import layout
    from regulator.cli.errors import CliError
    from regulator.host.person_acts import refuse_inside_agent

    try:
        layouts = [layout(args)]
    except CliError:  # no instance: nobody's agents are registered; the command says why
        layouts = []
    refuse_inside_agent(layouts)


def _person(args: argparse.Namespace) -> None:
    """``--by`` defaults to $REGULATOR_PERSON, as the room's person does; one must be given."""
    if getattr(args, "_person_act", False) and not args.by:
        args.by = os.environ.get(PERSON_ENV, "").strip() or None
        if args.by is None:
            raise UsageError(f"--by WHO is required (or set ${PERSON_ENV})")


def _act_json(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--json",
        action="store_true",
        help="print what was done as one JSON object (a refusal: its stderr line, nothing here)",
    )


def _obligation_commands(sub: Any) -> None:
    h = "regulator.cli.obligation_cmds"
    p = _command(
        sub,
        "obligations",
        f"{h}:cmd_obligations",
        "list what is owed: open and acknowledged obligations (--all: every one)",
        "regulator obligations --owed-to human",
    )
    p.add_argument("--all", action="store_true", help="include what was dispositioned")
    p.add_argument(
        "--owed-to", metavar="CONSUMER", help="only those owed to CONSUMER (S3, S5, human…)"
    )
    p.add_argument("--unit", metavar="U", help="only those naming unit U")
    p.add_argument("--json", action="store_true", help="print the obligations as JSON")

    ob = sub.add_parser(
        "obligation",
        help="show, acknowledge, resolve or escalate one obligation",
        description="show, acknowledge, resolve or escalate one obligation (full id or prefix)",
    )
    ob.set_defaults(_parser=ob)
    obs = ob.add_subparsers(metavar="ACTION", title="actions", parser_class=_Parser)
    p = _command(
        obs,
        "show",
        f"{h}:cmd_show",
        "one obligation: its sources and every event since it was opened",
        "regulator obligation show 3f2a",
    )
    p.add_argument("id", metavar="ID", help="obligation id or unique prefix")
    p.add_argument("--json", action="store_true", help="print the obligation as JSON")
    p = _command(
        obs,
        "ack",
        f"{h}:cmd_ack",
        "acknowledge: seen by someone who may handle it; not a disposition, the veto stands",
        "regulator obligation ack 3f2a --by alice --note 'looking at it'",
    )
    p.add_argument("id", metavar="ID", help="obligation id or unique prefix")
    _by(p)
    p.add_argument("--note", metavar="TEXT", help="an optional note")
    _act_json(p)
    p = _command(
        obs,
        "resolve",
        f"{h}:cmd_resolve",
        "close an obligation with a disposition and a rationale",
        "regulator obligation resolve 3f2a --by alice --disposition fixed --rationale 'merged'",
    )
    p.add_argument("id", metavar="ID", help="obligation id or unique prefix")
    _by(p)
    p.add_argument(
        "--disposition",
        required=True,
        metavar="D",
        help="no-action, accepted-risk, "
        "rework, replan, fixed, verified, rejected, accepted, research-requested, "
        "audit-requested or policy-clarification-requested",
    )
    p.add_argument("--rationale", required=True, metavar="TEXT", help="why")
    _act_json(p)
    p = _command(
        obs,
        "escalate",
        f"{h}:cmd_escalate",
        "hand an obligation to another consumer: a successor is opened, this one closes",
        "regulator obligation escalate 3f2a --by bob --to human --rationale 'needs alice'",
    )
    p.add_argument("id", metavar="ID", help="obligation id or unique prefix")
    _by(p)
    p.add_argument("--to", required=True, metavar="CONSUMER", help="S1…S5, S3* or human")
    p.add_argument(
        "--person",
        metavar="NAME",
        help="with --to human: owed to this person alone, who must be listed and may "
        "disposition at the obligation's severity",
    )
    p.add_argument("--rationale", required=True, metavar="TEXT", help="why")
    _act_json(p)

    p = _command(
        sub,
        "answer",
        f"{h}:cmd_answer",
        "answer a question a unit asked (an interaction obligation)",
        "regulator answer 3f2a --by alice --answer no --note 'not before the freeze ends'",
    )
    p.description = (
        "answer a question a unit asked (an interaction obligation)\n\n"
        "A consent or a uat takes one of these words and nothing else, in any case of its\n"
        "plain letters (a lookalike such as a long s in yeſ is not one); any other answer is\n"
        "refused and nothing is written. Only a yes authorizes; silence never does.\n"
        f"{_answer_words()}\n"
        "A choice takes an option, its number (1, 2, …) or a prefix only that option starts\n"
        "with. A clarification or a recap takes any text."
    )
    p.add_argument("id", metavar="OBLIGATION", help="obligation id or unique prefix")
    _by(p)
    p.add_argument("--answer", required=True, metavar="TEXT", help="the answer (see above)")
    p.add_argument(
        "--code",
        metavar="CODE",
        help="the one-time code a channel message carried: checked beside --by, spent once",
    )
    p.add_argument(
        "--note",
        metavar="TEXT",
        help="a reason, recorded with the answer and carried to the unit's next attempt",
    )
    _act_json(p)

    sig = sub.add_parser("signals", help="route the regulatory log's unrouted messages")
    sig.set_defaults(_parser=sig)
    sigs = sig.add_subparsers(metavar="ACTION", title="actions", parser_class=_Parser)
    p = _command(
        sigs,
        "route",
        f"{h}:cmd_route",
        "route every unrouted message under the routing policy, then deliver what is owed",
        "regulator signals route",
    )
    _act_json(p)


def _answer_words() -> str:
    """The accepted words, wrapped for ``--help`` (and so for docs/cli.md)."""
    import textwrap

    from regulator.rules import answers

    lines = []
    for label, words in (
        ("consent or uat, yes:", answers.YES_WORDS),
        ("uat, also yes:", answers.UAT_YES_WORDS),
        ("consent or uat, no:", answers.NO_WORDS),
        ("uat, also no:", answers.UAT_NO_WORDS),
    ):
        lines.append(
            textwrap.fill(
                ", ".join(words),
                width=88,
                initial_indent=f"  {label:<22}",
                subsequent_indent=" " * 24,
            )
        )
    return "\n".join(lines)


def _delivery_commands(sub: Any) -> None:
    h = "regulator.cli.delivery_cmds"
    p = _command(
        sub,
        "remind",
        f"{h}:cmd_remind",
        "one delivery tick: deliver what is owed to a person, remind what is due",
        "regulator remind",
    )
    _act_json(p)
    p = _command(
        sub,
        "watch",
        f"{h}:cmd_watch",
        "deliver and remind on every tick and forward new outbox lines to a command",
        "regulator watch --interval 30000 --exec notify-send regulator",
    )
    p.add_argument("--once", action="store_true", help="run one tick; exit 1 if a forward failed")
    p.add_argument("--interval", type=int, default=60000, metavar="MS", help="ms between ticks")
    p.add_argument(
        "--exec",
        nargs=argparse.REMAINDER,
        metavar="CMD",
        dest="exec_command",
        help="the channel command: each new outbox line is passed as its last argument",
    )
    p = _command(
        sub,
        "effects",
        f"{h}:cmd_effects",
        "the effect journal: every side effect, intended, committed, confirmed or absent",
        "regulator effects",
    )
    p.add_argument("--json", action="store_true", help="print the journal's states as JSON")
    p = _command(
        sub,
        "attention",
        "regulator.cli.attention_cmds:cmd_attention",
        "the attention spent: questions asked, answered, timed out, reminders, time to answer",
        "regulator attention --since 7d",
    )
    p.add_argument("--person", metavar="P", help="only what person P answered")
    p.add_argument("--since", metavar="AGE", default="7d", help="how far back: 12h, 7d, 4w")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")


def _reach_commands(sub: Any) -> None:
    """Reaching people where they are, and remote rooms (docs/reaching-people.md)."""
    h = "regulator.cli.delivery_cmds"
    p = _command(
        sub,
        "serve",
        f"{h}:cmd_serve",
        "route, deliver, remind and send to people's channels as soon as the log changes; "
        "one per instance, until SIGTERM or SIGINT",
        "nohup regulator serve >> .regulator/serve.log 2>&1 &",
    )
    p.add_argument(
        "--interval",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="a pass at least this often, for reminders and quiet hours that end (default 30)",
    )
    p.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="also serve the answer pages there (127.0.0.1:8765; port 0: any free one); each "
        "question's message then carries a one-time link to answer it, and a person it "
        "reaches counts as present",
    )
    p.add_argument(
        "--public-url",
        metavar="URL",
        help="the address the links give, when a person reaches the pages another way (a "
        "reverse proxy, ssh -L, a VPN name): https://regulator.example.com",
    )
    p = _command(
        sub,
        "stream",
        f"{h}:cmd_stream",
        "the instance's changes as JSON lines after a cursor, for a room on another machine "
        "(over ssh)",
        "ssh build-host regulator stream --instance /srv/repo --since 0",
    )
    p.add_argument(
        "--since",
        default="0",
        metavar="CURSOR",
        help="0 (everything), or the cursor of the last sync line received",
    )
    p.add_argument("--once", action="store_true", help="one batch and its sync line, then exit")
    p.add_argument(
        "--heartbeat",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="a heartbeat line after this long without a change (default 15)",
    )
    p = _command(
        sub,
        "deliveries",
        f"{h}:cmd_deliveries",
        "where each delivery to a person's channel went, and whether it failed",
        "regulator deliveries --obligation 3f2a",
    )
    p.add_argument("--obligation", metavar="ID", help="only this obligation (id or prefix)")
    p.add_argument("--json", action="store_true", help="print the records as JSON")


def _memory_identity_commands(sub: Any) -> None:
    h = "regulator.cli.memory_cmds"
    mem = _command(
        sub,
        "memory",
        f"{h}:cmd_memory",
        "operational memory: current facts with provenance and an expiry (--all: every state)",
        "regulator memory --all",
    )
    mem.add_argument("--all", action="store_true", help="include expired and retracted entries")
    mem.add_argument("--json", action="store_true", help="print the entries as JSON")
    mems = mem.add_subparsers(metavar="ACTION", title="actions", parser_class=_Parser)
    p = _command(
        mems,
        "retract",
        f"{h}:cmd_retract",
        "retract a memory entry: it is no longer rendered into units' context",
        "regulator memory retract 9c1e --by alice --reason 'the mirror moved'",
    )
    p.add_argument("id", metavar="ID", help="memory entry id or unique prefix")
    _by(p)
    p.add_argument("--reason", required=True, metavar="TEXT", help="why")
    _act_json(p)

    ident = sub.add_parser("identity", help="S5: decide a policy proposal owed to S5")
    ident.set_defaults(_parser=ident)
    idents = ident.add_subparsers(metavar="ACTION", title="actions", parser_class=_Parser)
    p = _command(
        idents,
        "accept",
        "regulator.cli.identity_cmds:cmd_accept",
        "accept a proposal: write the identity file from PATH, commit it, resolve as accepted",
        "regulator identity accept 3f2a --by alice --file INVARIANTS.md --from new.md "
        "--rationale 'agreed'",
    )
    p.add_argument("id", metavar="OBLIGATION", help="the policy-proposal obligation")
    _by(p)
    p.add_argument(
        "--file",
        required=True,
        metavar="NAME",
        help="IDENTITY.md, INVARIANTS.md, GLOSSARY.md or BOUNDARIES.md",
    )
    p.add_argument(
        "--from", required=True, dest="from_path", metavar="PATH", help="the file's new content"
    )
    p.add_argument("--rationale", required=True, metavar="TEXT", help="why")
    _act_json(p)
    p = _command(
        idents,
        "reject",
        "regulator.cli.identity_cmds:cmd_reject",
        "reject a proposal: identity unchanged, the obligation resolved as rejected",
        "regulator identity reject 3f2a --by alice --rationale 'out of scope'",
    )
    p.add_argument("id", metavar="OBLIGATION", help="the policy-proposal obligation")
    _by(p)
    p.add_argument("--rationale", required=True, metavar="TEXT", help="why")
    _act_json(p)


def _run(handler_path: str, args: argparse.Namespace) -> int:
    module_name, _, function = handler_path.partition(":")
    handler: Handler = getattr(importlib.import_module(module_name), function)
    return handler(args)


def main(argv: Sequence[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    named = given[0] if given and not given[0].startswith("-") else None
    # A command named: a parser of that command alone; else (--help, a typo) the whole one.
    parser = (_parser_of(named) if named is not None else None) or build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        # Report a stray argument with the usage of the command it was given to.
        getattr(args, "_parser", parser).error(f"unrecognized arguments: {' '.join(extra)}")
    handler = getattr(args, "_handler", None)
    if handler is None:
        getattr(args, "_parser", parser).print_help(sys.stderr)
        return 2
    try:
        _not_inside_agent(args)
        _person(args)
        return _run(handler, args)
    except UsageError as exc:
        args._parser.print_usage(sys.stderr)
        print(f"regulator: {visible(str(exc))}", file=sys.stderr)
        return 2
    except RegulatorError as exc:
        # The one place a refusal, corrupt state or a host failure becomes what a person
        # reads: every root the same way, each message naming its file, field or argument,
        # and the exit status its root's (``EXIT_STATUS``: 1, 4 or 5).
        # Only our own newlines separate lines: a CR or U+2028 quoted from a record does not.
        for line in message_of(exc).split("\n"):
            # A message may quote record text or what was typed: shown, never acted on.
            print(f"regulator: {visible(line)}", file=sys.stderr)
        return exit_status(exc)
    except BrokenPipeError:
        # `regulator obligations | head`: the reader went away; leave quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
