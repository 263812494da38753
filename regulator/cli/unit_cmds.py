"""``unit drive|dispatch|route|close|show|status|accept|evidence``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from regulator.cli.context import definition, instance_root, print_done, redactor
from regulator.cli.errors import CliError
from regulator.protocol.text import visible
from regulator.views.describe import describe_obligation, describe_observation


class _Everything:
    """Every model counts as available: a scripted session plays the model itself."""

    def __contains__(self, item: object) -> bool:
        return True


def _loop(args: argparse.Namespace) -> Any:
    from regulator.host.loop import Loop
    from regulator.host.sessions.script import ScriptAdapter, load_scenario
    from regulator.store import Layout

    root = instance_root(args)
    defn = definition(args, root)
    adapters: dict[str, Any] = {}
    models: Any = None
    script = getattr(args, "script", None)
    if script is not None:
        scenario = load_scenario(Path(script))
        adapters["script"] = ScriptAdapter(scenario)
        models = scenario.get("models") or _Everything()
        # --script runs every unit type scripted, whatever the workload says.
        for unit_type in _workload_types(defn):
            adapters[unit_type] = adapters["script"]
    loop = Loop(Layout(root), defn, adapters=adapters, models=models)
    if getattr(args, "accept_unenforced", False):
        from regulator.policy.workload import ACCEPT_FLAG

        loop.accept_unenforced = f"with {ACCEPT_FLAG}"
    return loop


def _workload_types(defn: Any) -> list[str]:
    from regulator.policy.workload import load_workload

    return list(load_workload(defn).unit_types)


def _contract(path: str) -> Any:
    from regulator.protocol.entry import load_record
    from regulator.protocol.execution import WorkContract

    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"{path}: cannot read the contract: {exc.strerror}") from None
    try:
        return load_record(WorkContract, raw, label=path)
    except ValueError as exc:
        # A schema problem names the file already; the JSON parser's words do not.
        message = str(exc)
        raise CliError(message if path in message else f"{path}: {message}") from None


def _say(loop: Any) -> Callable[[str], None]:
    """Prints a line made of record fields (each ``visible`` already), redacted: a unit's
    reasons, observations and obligations hold agents' text, which may hold a secret."""
    redacted = redactor(loop.layout.root)

    def say(line: str) -> None:
        print(redacted.lines(line))

    return say


def _decision_lines(d: Any) -> list[str]:
    lines = [
        f"  attempt {d.attempt}: {d.cause} → {d.action} "
        f"({d.policy.name} v{d.policy.version}, occurrence {d.occurrence})"
    ]
    if d.question:
        lines.append(f"    question: {d.question}")
    return lines


def _json(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "json", False))


def _contract_ref(contract: Any) -> dict[str, object]:
    return {"id": contract.id, "version": contract.version}


def _ended(loop: Any, outcome: Any) -> dict[str, object]:
    """How a dispatch, drive or close ended, for ``--json``: what ``_finish`` prints as lines
    (the status, the merge, the reason, the problems, and what the unit is owed)."""
    unit_id = outcome.unit.unit_id if outcome.unit is not None else None
    owes = unit_id is not None and outcome.status not in ("closed", "refused")
    return {
        "status": outcome.status,
        "merged": outcome.merged,
        "reason": outcome.reason,
        "problems": list(outcome.problems),
        "owed": [o.to_json_dict() for o in loop.owed(unit_id)] if owes else [],
    }


def _refused(loop: Any, outcome: Any) -> CliError:
    """A refused dispatch or close under ``--json``: its problems on stderr, nothing on stdout."""
    unit_id = outcome.unit.unit_id if outcome.unit is not None else "?"
    problems = [visible(p) for p in outcome.problems] or [f"unit {visible(unit_id)} is refused"]
    return CliError(redactor(loop.layout.root).lines("\n".join(problems)))


def _finish(loop: Any, outcome: Any, *, show_hint: bool = False) -> int:
    unit_id = outcome.unit.unit_id if outcome.unit is not None else "?"
    say = _say(loop)
    if outcome.status == "closed":
        say(visible(f"unit {unit_id} closed: reintegrated as {(outcome.merged or '')[:7]}"))
        return 0
    if outcome.status == "refused":
        for problem in outcome.problems:
            say(visible(f"✖ {problem}"))
        return 1
    say(visible(f"unit {unit_id}: {outcome.reason}"))
    for problem in outcome.problems:
        say(visible(f"  ✖ {problem}"))
    for o in loop.owed(unit_id):
        say(f"  owed: {describe_obligation(o)}")
    if show_hint:
        say(visible(f"see `regulator unit show {unit_id}`"))
    return 1


def cmd_drive(args: argparse.Namespace) -> int:
    contract = _contract(args.contract)
    loop = _loop(args)
    if _json(args):
        driven = loop.drive(contract)
        if driven.outcome.status == "refused" and not driven.decisions:
            raise _refused(loop, driven.outcome)
        print_done(loop.layout.root, _driven(loop, "drive", contract, driven))
        return 0 if driven.outcome.status == "closed" else 1
    say = _say(loop)
    say(visible(f"driving unit {contract.unit_id} ({contract.id} v{contract.version})"))
    driven = loop.drive(contract)
    for d in driven.decisions:
        for line in _decision_lines(d):
            say(visible(line))
    return _finish(loop, driven.outcome)


def _driven(loop: Any, act: str, contract: Any, driven: Any) -> dict[str, object]:
    """``unit drive --json``'s object: the unit, its contract, how it ended, the decisions."""
    return {
        "act": act,
        "unit": contract.unit_id,
        "contract": _contract_ref(contract),
        **_ended(loop, driven.outcome),
        "decisions": [d.to_json_dict() for d in driven.decisions],
    }


def cmd_dispatch(args: argparse.Namespace) -> int:
    contract = _contract(args.contract)
    loop = _loop(args)
    if _json(args):
        outcome = loop.dispatch(contract)
        if outcome.status == "refused":
            raise _refused(loop, outcome)
        value = {
            "act": "dispatch",
            "unit": contract.unit_id,
            "contract": _contract_ref(contract),
            **_ended(loop, outcome),
        }
        print_done(loop.layout.root, value)
        return 0 if outcome.status == "closed" else 1
    say = _say(loop)
    say(visible(f"dispatching unit {contract.unit_id} ({contract.id} v{contract.version})"))
    outcome = loop.dispatch(contract)
    return _finish(loop, outcome, show_hint=True)


def cmd_route(args: argparse.Namespace) -> int:
    loop = _loop(args)
    say = _say(loop)
    unit = loop.store.unit(args.id)
    nothing: str | None = None
    waiting = None
    decision = None
    if unit.status != "blocked":
        nothing = f"unit {unit.unit_id} is {unit.status}, not blocked; nothing to route"
    elif (waiting := loop.awaiting_decision(args.id)) is not None:
        nothing = (
            f"unit {unit.unit_id} already waits on its recovery decision (obligation "
            f"{waiting.id[:8]}, owed to {waiting.consumer}); nothing routed"
        )
    elif (decision := loop.route(args.id)) is None:
        nothing = (
            f"unit {args.id} is paused on a question a person has not answered; nothing to route"
        )
    if _json(args):
        value = {
            "act": "route-unit",
            "unit": unit.unit_id,
            "decision": decision.to_json_dict() if decision is not None else None,
            "nothingRouted": nothing,
            "awaiting": waiting.to_json_dict() if waiting is not None else None,
            "owed": [o.to_json_dict() for o in loop.owed(args.id)],
        }
        print_done(loop.layout.root, value)
        return 0
    if nothing is not None:
        say(visible(nothing))
        if unit.status != "blocked" or waiting is not None:
            return 0
    if decision is not None:
        for line in _decision_lines(decision):
            say(visible(line))
        say(visible(f"  {decision.rationale}"))
        for e in decision.evidence:
            say(visible(f"  evidence: {e}"))
        if decision.hint:
            say(visible(f"  hint for the next attempt: {decision.hint}"))
    for o in loop.owed(args.id):
        say(f"  owed: {describe_obligation(o)}")
    return 0


def cmd_close(args: argparse.Namespace) -> int:
    loop = _loop(args)
    outcome = loop.reaudit(args.id)
    if _json(args):
        if outcome.status == "refused":
            raise _refused(loop, outcome)
        print_done(loop.layout.root, {"act": "close", "unit": args.id, **_ended(loop, outcome)})
        return 0 if outcome.status == "closed" else 1
    return _finish(loop, outcome)


def cmd_show(args: argparse.Namespace) -> int:
    from regulator.protocol.execution import FailureObservation
    from regulator.rules.audit_log import summarize_verdict
    from regulator.rules.budget import summary

    loop = _loop(args)
    # Printed once everything is read: a log that cannot be read refuses the command with one
    # line, not after half of the unit.
    shown: list[str] = []
    say = shown.append
    unit = loop.store.unit(args.id)
    contract = f"{unit.contract.id} v{unit.contract.version}"
    reason = f" — {unit.reason}" if unit.reason else ""
    say(
        visible(
            f"{unit.status} {unit.unit_id} ({unit.unit_type}, {contract}), "
            f"{unit.attempts} attempt(s){reason}"
        )
    )
    observed: dict[int, list[FailureObservation]] = {}
    for o in loop.store.observations(unit.unit_id):
        observed.setdefault(o.attempt, []).append(o)

    def observations(attempt: int) -> None:
        for o in observed.pop(attempt, []):
            say("    " + describe_observation(o).replace("\n", "\n    "))

    for a in loop.store.attempts(unit.unit_id):
        detail = f" — {a.detail}" if a.detail else ""
        say(visible(f"  attempt {a.attempt}: {a.outcome}{detail}"))
        ledger = loop.store.budget(unit.unit_id, a.attempt)
        if ledger is not None:
            models = ", ".join(ledger.models) or "no model"
            say(
                visible(
                    f"    budget {summary(ledger)}; models {models}; "
                    f"{len(ledger.compactions)} compaction(s)"
                )
            )
        observations(a.attempt)
    # Observed during an attempt not (yet) in attempts.ndjson: one still running, or one whose
    # writer died before its attempt line.
    for attempt in sorted(observed):
        say(f"  attempt {attempt}: not ended")
        observations(attempt)
    for d in loop.store.decisions(unit.unit_id):
        for line in _decision_lines(d):
            say(visible(line))
    report = loop.store.latest_report(unit.unit_id)
    say(visible(f"  report: {report.summary}") if report is not None else "  report: none")
    verdict = loop.audit.audit_for(unit.unit_id).latest_verdict
    if verdict is None:
        say("  audit: no verdict")
    else:
        say(visible(f"  audit: {summarize_verdict(verdict)} @{verdict.revision[:7]}"))
        for r in verdict.reasons:
            say(visible(f"    {r}"))
    for o in loop.log.obligations.values():
        if o.unit == unit.unit_id:
            say(f"  {describe_obligation(o)}".replace("\n", "\n  "))
    say(_next_line(loop, unit))
    _say(loop)("\n".join(shown))
    return 0


# The command that takes each next step (``regulator.views.next_step``), for ``unit show``.
_NEXT_COMMAND = {
    "answer": "regulator answer {oid} --answer TEXT",
    "resolve": "regulator obligation resolve {oid} --by PERSON --disposition D --rationale WHY",
    "replan": "regulator unit replan {unit} --contract FILE --by PERSON --reason WHY",
    "remediate": "regulator unit remediate {unit} --by PERSON --note WHAT",
    "drive": "regulator unit drive CONTRACT",
    "close": "regulator unit close {unit}",
}


def _next_line(loop: Any, unit: Any) -> str:
    """``  next: <what holds it, or ready to drive>`` and the command that acts on it."""
    from regulator.views.next_step import next_step_of

    step = next_step_of(loop.log, loop.store, unit, attempt_ceiling=loop._ceiling(unit.unit_type))
    line = f"  next: {step.text}"
    if step.act is not None:
        oid = step.obligation.id[:8] if step.obligation is not None else ""
        line += "\n    " + _NEXT_COMMAND[step.act].format(oid=oid, unit=visible(unit.unit_id))
    return line


def cmd_status(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from regulator.host.leases import LeaseStore
    from regulator.store import Layout

    store = LeaseStore(Layout(instance_root(args)))
    leases = store.leases()
    if not leases:
        print("no leases")
    for lease in leases:
        state = "live   " if store.is_live(lease) else "expired"
        until = datetime.fromtimestamp(lease.expires_at / 1000, UTC).isoformat(timespec="seconds")
        print(visible(f"{state} {lease.unit_id}  {lease.owner}  {lease.branch}  until {until}"))
    return 0


def cmd_accept(args: argparse.Namespace) -> int:
    from regulator.host.acceptance import accept_criterion
    from regulator.host.instance import os_user
    from regulator.policy.loader import acting_people_check
    from regulator.rules.ledger import Actor, definition_label

    loop = _loop(args)
    acting_people_check(loop.definition, loop.layout.root)
    acceptance = accept_criterion(
        loop,
        args.id,
        args.criterion,
        args.by,
        Actor("cli", os_user(), definition=definition_label(loop.definition.root)),
        reject=args.reject,
        note=args.note,
    )
    if _json(args):
        act = "reject-criterion" if args.reject else "accept-criterion"
        value = {"act": act, "unit": args.id, "acceptance": acceptance.to_json_dict()}
        print_done(loop.layout.root, value)
        return 0
    print(
        visible(
            f"unit {args.id}: {args.criterion} {acceptance.disposition} by {args.by} at "
            f"revision {acceptance.revision[:7]}; run `regulator unit close {args.id}` to re-audit"
        )
    )
    return 0


def cmd_evidence(args: argparse.Namespace) -> int:
    from regulator.rules.audit_log import summarize_verdict

    loop = _loop(args)
    loop.store.unit(args.id)
    audit = loop.audit.audit_for(args.id)
    if not (audit.evidence or audit.verdicts or audit.acceptances):
        print(visible(f"no audit entries for unit {args.id}"))
        return 0
    for e in audit.evidence:
        first = e.observation.splitlines()[0] if e.observation else ""
        print(
            visible(
                f"evidence  {e.verdict} attempt {e.attempt} {e.revision[:7]} {e.check} "
                f"[{e.class_} → {', '.join(e.criteria)}] {first}"
            )
        )
    for a in audit.acceptances:
        note = f" — {a.note}" if a.note else ""
        print(
            visible(f"acceptance  {a.disposition} {a.criterion} by {a.by} @{a.revision[:7]}{note}")
        )
    for v in audit.verdicts:
        print(visible(f"verdict  {summarize_verdict(v)} attempt {v.attempt} @{v.revision[:7]}"))
        for r in v.reasons:
            print(visible(f"  {r}"))
    return 0


# --- acting on what a unit waits on: replan, remediate ----------------------------------------


def _acting(args: argparse.Namespace, loop: Any) -> Any:
    """The person's actor; ``--definition`` may not bring other people."""
    from regulator.host.instance import os_user
    from regulator.policy.loader import acting_people_check
    from regulator.rules.ledger import Actor, definition_label

    acting_people_check(loop.definition, loop.layout.root)
    return Actor("cli", os_user(), definition=definition_label(loop.definition.root))


def _drivable(args: argparse.Namespace, loop: Any, unit_type: str) -> None:
    """Before a replan or remediation is recorded: the drive after it would be refused for
    what regulator does not enforce, so nothing is written."""
    if args.no_drive:
        return
    problems = loop.unaccepted(unit_type)
    if problems:
        raise CliError(f"{problems[0]}, or record it with --no-drive")


def _redrive_json(
    args: argparse.Namespace, loop: Any, unit_id: str, value: dict[str, object]
) -> int:
    """``value`` (what was recorded) with ``"drive"``: how the drive after it ended, as
    ``unit drive --json`` says it, or null with ``--no-drive``. The act is recorded either way,
    so a drive the gate refuses is said here (status ``refused``), not as a refusal."""
    if args.no_drive:
        value["drive"] = None
        print_done(loop.layout.root, value)
        return 0
    contract = loop.current_contract(unit_id)
    driven = loop.drive(contract)
    value["drive"] = _driven(loop, "drive", contract, driven)
    print_done(loop.layout.root, value)
    return 0 if driven.outcome.status == "closed" else 1


def _redrive(args: argparse.Namespace, loop: Any, unit_id: str) -> int:
    if args.no_drive:
        print(visible(f"run `regulator unit drive` on its contract to go on (unit {unit_id})"))
        return 0
    contract = loop.current_contract(unit_id)
    print(visible(f"driving unit {unit_id} ({contract.id} v{contract.version})"))
    driven = loop.drive(contract)
    for d in driven.decisions:
        for line in _decision_lines(d):
            print(visible(line))
    return _finish(loop, driven.outcome)


def cmd_replan(args: argparse.Namespace) -> int:
    from regulator.host.loop import ReplanRefused
    from regulator.host.sessions.script import ScenarioError
    from regulator.rules.execution import ExecutionError, contract_changes
    from regulator.rules.ledger import LedgerError

    contract = _contract(args.contract)
    loop = _loop(args)
    if contract.unit_type in loop.workload.unit_types:
        _drivable(args, loop, contract.unit_type)
    try:
        actor = _acting(args, loop)
        done = loop.replan(args.id, contract, args.by, actor, reason=args.reason)
    except ReplanRefused as exc:
        refused = f"{args.contract}: the replan of unit {args.id} is refused"
        if _json(args):
            # Nothing on stdout: the problems are the stderr lines after the refusal's.
            problems = [visible(f"✖ {p}") for p in exc.problems]
            lines = redactor(loop.layout.root).lines("\n".join(problems))
            raise CliError("\n".join([refused, lines] if problems else [refused])) from None
        for problem in exc.problems:
            print(visible(f"✖ {problem}"))
        raise CliError(refused) from None
    except (ExecutionError, LedgerError, ValueError) as exc:
        raise CliError(str(exc)) from None
    new, old = done.contract, done.predecessor
    if _json(args):
        value: dict[str, object] = {
            "act": "replan",
            "unit": args.id,
            "contract": _contract_ref(new),
            "predecessor": _contract_ref(old),
            "reason": new.provenance.predecessor.reason if new.provenance.predecessor else None,
            "changes": contract_changes(old, new),
            "resolved": done.resolved.to_json_dict() if done.resolved is not None else None,
            "owed": [o.to_json_dict() for o in loop.owed(args.id)],
        }
        try:
            return _redrive_json(args, loop, args.id, value)
        except (ExecutionError, LedgerError, ScenarioError, ValueError) as exc:
            raise CliError(str(exc)) from None
    print(
        visible(
            f"unit {args.id}: {new.id} v{new.version} replaces v{old.version} "
            f"({new.provenance.predecessor.reason if new.provenance.predecessor else ''})"
        )
    )
    for line in contract_changes(old, new):
        print(visible(f"  {line}"))
    if done.resolved is not None:
        print(
            visible(
                f"obligation {done.resolved.id[:8]} resolved by {args.by} as replan; the next "
                "attempt is told why"
            )
        )
    for o in loop.owed(args.id):
        print(f"  owed: {describe_obligation(o)}")
    try:
        return _redrive(args, loop, args.id)
    except (ExecutionError, LedgerError, ScenarioError, ValueError) as exc:
        raise CliError(str(exc)) from None


def cmd_remediate(args: argparse.Namespace) -> int:
    import shlex

    from regulator.host.loop import RemediationFailed
    from regulator.host.sessions.script import ScenarioError
    from regulator.rules.execution import ExecutionError
    from regulator.rules.ledger import LedgerError

    try:
        run = shlex.split(args.run) if args.run is not None else None
    except ValueError as exc:
        raise CliError(f"--run: {exc}") from None
    if run is not None and not run:
        raise CliError("--run: an empty command")
    loop = _loop(args)
    try:
        _drivable(args, loop, loop.store.unit(args.id).unit_type)
        actor = _acting(args, loop)
        done = loop.remediate(args.id, args.by, actor, args.note, run=run)
    except RemediationFailed as exc:
        # The command's last lines, then the refusal; with --json on stderr, nothing on stdout.
        out = sys.stderr if _json(args) else sys.stdout
        for line in exc.output.splitlines()[-20:]:
            print(visible(f"  {line}"), file=out)
        raise CliError(str(exc)) from None
    except (ExecutionError, LedgerError, ValueError) as exc:
        raise CliError(str(exc)) from None
    if _json(args):
        value: dict[str, object] = {
            "act": "remediate",
            "unit": args.id,
            "obligation": done.obligation.to_json_dict(),
            "evidence": done.evidence.to_json_dict() if done.evidence is not None else None,
        }
        try:
            return _redrive_json(args, loop, args.id, value)
        except (ExecutionError, LedgerError, ScenarioError, ValueError) as exc:
            raise CliError(str(exc)) from None
    line = f"obligation {done.obligation.id[:8]} resolved by {args.by} as fixed: "
    print(visible(line + (done.obligation.rationale or "")))
    try:
        return _redrive(args, loop, args.id)
    except (ExecutionError, LedgerError, ScenarioError, ValueError) as exc:
        raise CliError(str(exc)) from None
