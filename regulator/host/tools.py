"""The session tools: one implementation of what a unit's session may call beyond its own.

Each tool declares its effect. The gates run here, for every caller (a scripted session now;
the MCP server and ``regulator tool`` use the same object): a tool the profile does not grant
is refused; once the attempt is paused on an unanswered question, or the budget guard halted
it, every tool with an effect is refused for the rest of the attempt and only pure reads
remain. Every refusal and error of a tool is also recorded as a failure observation, so the
recovery router can route the attempt by what went wrong even if the session then goes quiet.
"""

from __future__ import annotations

import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import orjson

from regulator.host.conventions import discover
from regulator.host.delivery import route_and_deliver
from regulator.host.presence import present
from regulator.host.reach import reachable
from regulator.host.session_units import SESSION_TYPE
from regulator.host.tool_catalog import input_problem
from regulator.host.worktree import head_of, is_dirty
from regulator.policy import Definition, PolicyError
from regulator.protocol.clock import Clock, now_iso, system_clock
from regulator.protocol.entry import validate_record
from regulator.protocol.errors import HostFailure, Refused
from regulator.protocol.evidence import EvidenceRef
from regulator.protocol.execution import (
    FailureObservation,
    ResultReport,
    ResultReportInput,
    WorkContract,
)
from regulator.protocol.interaction import CONTINUES_WITHOUT_ANSWER, InteractionRequest
from regulator.protocol.messages import IntelligenceSignal, PolicyProposal
from regulator.protocol.policies import InteractionPolicy
from regulator.protocol.text import visible
from regulator.rules.answers import disposition_for_answer
from regulator.rules.asking import AskRefused, ask_in
from regulator.rules.attention_budget import attempt_refusal, raised, session_of, session_refusal
from regulator.rules.budget import BudgetGuard, read_ledger
from regulator.rules.effect_journal import EffectJournal, effect_key
from regulator.rules.execution import ExecutionStore, check_result_report
from regulator.rules.ledger import Ledger
from regulator.rules.memory_store import MemoryRefusal, MemoryStore
from regulator.rules.pause import (
    AttemptQuestions,
    attempt_questions,
    blocking_questions,
    questions_of,
)
from regulator.rules.recovery import cause_from_error
from regulator.rules.session_journal import Run, SessionJournal, SessionState
from regulator.store import Layout, RecordNotFound, locked_log, read_bytes

Effect = Literal["read-only", "execution", "store", "irreversible", "log"]

EFFECTS: dict[str, Effect] = {
    "read_conventions": "read-only",
    "run_checks": "read-only",
    "run_tests": "execution",
    "report_result": "store",
    "ask_human": "irreversible",
    "notify_owner": "irreversible",
    "remember": "store",
    "report_intelligence": "log",
    "propose_policy_change": "log",
}

# `run_checks` is read-only as the seed declares it (it records nothing a report could not
# cite), but it runs the project's test command: code the agent wrote. So a pause, an attempt
# that is not in progress or a halted budget refuses it like any tool with an effect; only the
# pure reads remain then.
RUNS_PROJECT_CODE = frozenset({"run_checks", "run_tests"})

OUTPUT_LIMIT = 4000
# How often a wait for a person reads what was appended: a read of the new bytes only, so a
# short interval costs little and the answer reaches the agent soon after the key press.
ANSWER_POLL_S = 0.01


class ToolRefused(Refused):
    """What the tool tells the agent instead of doing it: the session, the contract or the
    arguments do not allow it (asking differently may succeed)."""


class ToolFailed(HostFailure):
    """A tool the machine could not run: its command is missing, or it ran past its time. The
    request was fine; on a machine that has the command, or later, it may succeed."""


def _paused_message(paused: str) -> str:
    return (
        f"paused: {paused}. Only pure reads remain in this attempt; "
        "a person will answer with `regulator answer`. Stop here."
    )


def _log_bytes(path: Path) -> bytes:
    try:
        return read_bytes(path)
    except RecordNotFound:
        return b""


def _size(path: Path) -> int:
    try:
        return path.lstat().st_size
    except FileNotFoundError:
        return 0


def _split_note(request: InteractionRequest, recorded: str) -> tuple[str, str]:
    """The answer and the note a person typed beside it (recorded as ``answer — note``).

    Split only where the head is what the question accepts (a yes or no word, an option), so
    a free-text answer that happens to hold a dash stays whole.
    """
    head, sep, tail = recorded.partition(" — ")
    if not sep:
        return recorded, ""
    if request.kind in ("consent", "uat"):
        known = disposition_for_answer(request.kind, head) is not None
    else:
        known = bool(request.options) and head in (request.options or [])
    return (head, tail) if known else (recorded, "")


def answer_result(
    request: InteractionRequest, answered: dict[str, Any], resolved: dict[str, Any] | None
) -> dict[str, Any]:
    """What the agent is told of a person's answer: the decision, and every word they added.

    Every word is made inert (``visible``): it reaches an agent's terminal and its model, and a
    control character in a note must arrive as text, not as an escape a JSON parser restores.
    """
    by = visible(str(answered.get("by", "?")))
    text, note = _split_note(request, str(answered.get("answer") or ""))
    text, note = visible(text), visible(note)
    disposition = resolved.get("disposition") if resolved is not None else None
    result: dict[str, Any] = {
        "answered": True,
        "by": by,
        "answer": text,
        "disposition": disposition,
    }
    if note:
        result["note"] = note
    said = f" They said: {note}" if note else ""
    if request.kind == "consent":
        if disposition == "accepted":
            message = f"Consent given by {by}: you may perform the action as asked.{said}"
        else:
            message = f"Consent refused by {by}: do NOT perform the action.{said}"
    elif request.kind == "uat":
        verdict = "verified" if disposition == "verified" else "rejected"
        message = f"{by} {verdict} it.{said}"
    else:
        message = f"{by} answered: {text}{said}"
    result["message"] = message
    return result


class SessionTools:
    def __init__(
        self,
        layout: Layout,
        definition: Definition,
        *,
        contract: WorkContract,
        attempt: int,
        worktree: Any,
        grants: list[str],
        guard: BudgetGuard | None = None,
        clock: Clock = system_clock,
        sleep: Callable[[float], None] = time.sleep,
        wait_for_person: bool = True,
        contracted: bool = True,
    ) -> None:
        self.layout = layout
        self.definition = definition
        self.contract = contract
        self.unit_id = contract.unit_id
        self.attempt = attempt
        self.worktree = worktree
        # A contracted unit can always report; a session unit a person started has nothing to
        # report against and is never offered report_result.
        self.contracted = contracted
        self.grants = set(grants) | ({"report_result"} if contracted else set())
        self.guard = guard
        self.clock = clock
        self.sleep = sleep
        self.wait_for_person = wait_for_person
        # Per call: set by a caller that gives up waiting (an MCP client cancelled the call).
        self._local = threading.local()
        self.journal = SessionJournal(layout, self.unit_id, attempt)
        self.ledger = Ledger(layout, clock=clock)
        self.store = ExecutionStore(layout, clock)

    def _cancelled(self) -> bool:
        cancel: threading.Event | None = getattr(self._local, "cancel", None)
        return cancel is not None and cancel.is_set()

    @property
    def state(self) -> SessionState:
        """The runs and the report of this attempt, read afresh: another process of this
        attempt may have run the tests."""
        return self.journal.read()

    def questions(self) -> AttemptQuestions:
        """This attempt's own blocking questions, from the regulatory log: the pause and the
        attention budget hold whatever happened to any journal or waiting process."""
        return attempt_questions(self.layout.signals, self.unit_id, self.attempt)

    @property
    def paused(self) -> str | None:
        return self.questions().paused

    def _session_questions(self, data: bytes) -> list[datetime | None]:
        """When this session's blocking questions were raised, in every run of it.

        The runs are the session units named as this one's (:func:`session_of`); a unit so
        named that is not a session unit (a contract can name a unit anything) is not one.
        """
        session = session_of(self.unit_id)
        found = blocking_questions(data, lambda unit, _: session_of(unit) == session)
        runs = {self.unit_id} | {
            unit
            for unit in {q.unit for q in found} - {self.unit_id}
            if (record := self.store.find_unit(unit)) is not None
            and record.unit_type == SESSION_TYPE
        }
        return [raised(q.raised_at) for q in found if q.unit in runs]

    def _budget_halted(self) -> str | None:
        if self.guard is not None:
            exhausted = self.guard.exhausted
        else:  # another process meters this attempt: its ledger on disk says
            ledger = read_ledger(self.layout, self.unit_id, self.attempt)
            exhausted = ledger.exhausted if ledger is not None else None
        return None if exhausted is None else str(exhausted.dimension)

    # -- the gate ---------------------------------------------------------------------------

    def call(
        self,
        name: str,
        args: dict[str, Any],
        *,
        cancel: threading.Event | None = None,
        max_wait_s: float | None = None,
        host_asked: bool = False,
    ) -> dict[str, Any]:
        """Run one tool, or refuse it; a refusal or error is also a failure observation.

        ``cancel``, when set by another thread, ends a wait for a person as ``cancelled``;
        ``max_wait_s`` shortens (never lengthens) the kind's timeout for this call.
        """
        self._local.cancel = cancel if cancel is not None else threading.Event()
        self._local.max_wait_s = max_wait_s
        self._local.host_asked = host_asked
        try:
            self._gate(name)
            problem = input_problem(name, args, len(orjson.dumps(args)))
            if problem is not None:
                raise ToolRefused(f"{name}: {problem}")
            handler = getattr(self, f"_tool_{name}")
            result: dict[str, Any] = handler(args)
            return result
        except (ToolRefused, ToolFailed) as exc:
            self._observe(name, str(exc))
            raise
        except AskRefused as exc:
            self._observe(name, str(exc))
            raise ToolRefused(str(exc)) from None

    def _gate(self, name: str) -> None:
        effect = EFFECTS.get(name)
        if effect is None:
            raise ToolRefused(f"no tool {name!r}")
        if name not in self.grants:
            raise ToolRefused(f"{name} is not granted to unit type {self.contract.unit_type}")
        if effect == "read-only" and name not in RUNS_PROJECT_CODE:
            return
        self._in_progress()
        paused = self.paused
        if paused is not None:
            raise ToolRefused(_paused_message(paused))
        halted = self._budget_halted()
        if halted is not None:
            raise ToolRefused(
                f"the budget guard halted this attempt ({halted}); "
                "no tool with an effect runs any more"
            )

    def _in_progress(self) -> None:
        """Nothing is recorded for an attempt that is not the one running: not a report, an
        effect or a question of an attempt that ended (or has not begun)."""
        unit = self.store.find_unit(self.unit_id)
        if unit is None or unit.status != "dispatched" or unit.attempts + 1 != self.attempt:
            now: str = "gone" if unit is None else unit.status
            if unit is not None and unit.status == "dispatched":
                now = f"in attempt {unit.attempts + 1}"
            raise ToolRefused(
                f"attempt {self.attempt} of unit {self.unit_id} is not in progress (the unit is "
                f"{now}); nothing is recorded for it"
            )

    def _observe(self, tool: str, message: str) -> None:
        cause = "invalid-report" if tool == "report_result" else cause_from_error(message)
        self.store.record_observation(
            FailureObservation.from_json_dict(
                {
                    "unitId": self.unit_id,
                    "attempt": self.attempt,
                    "at": now_iso(self.clock),
                    "source": "tool",
                    "toolName": tool,
                    "cause": cause,
                    "message": " ".join(message.split())[:300],
                }
            )
        )

    def _interaction_policy(self) -> InteractionPolicy | None:
        try:
            return self.definition.interaction
        except PolicyError:
            return None  # the original's rule: no valid policy, and every question pauses

    # -- read-only ------------------------------------------------------------------------

    def _tool_read_conventions(self, args: dict[str, Any]) -> dict[str, Any]:
        return discover(self.worktree).to_json()

    def _run(self, tool: str, command: list[str]) -> dict[str, Any]:
        try:
            done = subprocess.run(
                command, cwd=self.worktree, capture_output=True, text=True, timeout=600
            )
        except FileNotFoundError:
            raise ToolFailed(f"command not found: {command[0]}") from None
        except subprocess.TimeoutExpired:
            raise ToolFailed(f"{' '.join(command)} timed out after 600 s") from None
        output = (done.stdout + done.stderr).strip()
        run = Run(
            tool=tool,
            command=command,
            passed=done.returncode == 0,
            revision=head_of(self.worktree),
            dirty=is_dirty(self.worktree),
            summary=output.splitlines()[-1] if output else f"exit {done.returncode}",
            at=now_iso(self.clock),
        )
        self.journal.append({"event": "run", **run.__dict__})
        result: dict[str, Any] = {
            "passed": run.passed,
            "exitCode": done.returncode,
            "summary": run.summary,
            "revision": run.revision,
            "dirty": run.dirty,
        }
        if not run.passed:
            result["output"] = output[-OUTPUT_LIMIT:]
        return result

    def _tool_run_checks(self, args: dict[str, Any]) -> dict[str, Any]:
        conventions = discover(self.worktree)
        if conventions.test_command is None:
            return {"passed": True, "summary": "no checks are defined", "checks": []}
        return {
            "checks": [conventions.test_source],
            **self._run("run_checks", conventions.test_command),
        }

    def _tool_run_tests(self, args: dict[str, Any]) -> dict[str, Any]:
        conventions = discover(self.worktree)
        if conventions.test_command is None:
            raise ToolRefused(f"no test command: {conventions.test_source}")
        return self._run("run_tests", conventions.test_command)

    # -- the report -------------------------------------------------------------------------

    def _tool_report_result(self, args: dict[str, Any]) -> dict[str, Any]:
        if self.state.reported or self.store.report(
            self.unit_id, self.contract.version, self.attempt
        ):
            raise ToolRefused(
                "report_result was already called in this session; a report is never revised"
            )
        try:
            report_input = validate_record(ResultReportInput, args, label="report")
        except ValueError as exc:
            raise ToolRefused(str(exc)) from None
        self._preflight(report_input)
        report = ResultReport.bind(
            report_input,
            contract_id=self.contract.id,
            contract_version=self.contract.version,
            unit_id=self.unit_id,
            attempt=self.attempt,
            reported_at=now_iso(self.clock),
        )
        problems = check_result_report(self.contract, report, self.unit_id)
        if problems:
            raise ToolRefused(
                "the report does not honour the contract: " + "; ".join(str(p) for p in problems)
            )
        self.store.write_report(report)
        self.journal.append({"event": "reported", "at": report.reported_at})
        return {"recorded": f"report.v{report.contract_version}.a{report.attempt}.json"}

    def _preflight(self, report: ResultReportInput) -> None:
        """A claim of tests or commands must rest on a passing run, here, at this revision."""
        cited = [e for e in report.evidence if e.class_ in ("test", "command")]
        if not cited:
            return
        revision = head_of(self.worktree)
        if is_dirty(self.worktree):
            raise ToolRefused(
                "the report cites test or command evidence but the worktree has uncommitted "
                "changes: commit, run the checks again, then report"
            )
        good = [r for r in self.state.runs if r.passed and r.revision == revision and not r.dirty]
        if not good:
            raise ToolRefused(
                "the report cites test or command evidence, but no passing run_tests or "
                f"run_checks in this session ran at revision {revision[:7]}"
            )

    # -- asking a person ----------------------------------------------------------------------

    def _tool_ask_human(self, args: dict[str, Any]) -> dict[str, Any]:
        kind = str(args.get("kind", ""))
        host: bool = getattr(self._local, "host_asked", False)
        if kind not in CONTINUES_WITHOUT_ANSWER:
            raise ToolRefused(
                f"kind {kind!r} is not one of recap, choice, clarification, consent, uat"
            )
        policy = self._interaction_policy()
        waits = not CONTINUES_WITHOUT_ANSWER[kind]  # type: ignore[index]
        room = bool(present(self.layout, self.clock)) and policy is not None
        # Ours: nobody in the room, but a running `serve --http` will put a link to the answer
        # page on the phone (or mail…) of someone who may answer: they count as present too.
        reached = [] if room else reachable(self.layout, policy, kind, self.clock)
        someone = room or bool(reached)
        asking_now = someone and self.wait_for_person
        # Under the log's lock, counted from the log: two processes of this unit cannot both
        # pass the attention budget, and the count is the record's, not a journal's.
        with self.ledger.transaction() as txn:
            if waits and not host:
                data = _log_bytes(self.layout.signals)
                mine = questions_of(data, self.unit_id, self.attempt)
                if mine.paused is not None:
                    raise ToolRefused(_paused_message(mine.paused))
                # Without a valid policy nobody is asked and every question pauses (the
                # original's rule), so the budget is not what refuses it.
                if policy is not None:
                    spent = (
                        attempt_refusal(mine.blocking_asked, policy.attention.blocking_per_attempt)
                        if self.contracted
                        else session_refusal(
                            self._session_questions(data),
                            policy.attention.for_sessions.blocking_per_hour,
                            self.clock(),
                        )
                    )
                    if spent is not None:
                        raise ToolRefused(spent)
            asked = ask_in(
                txn,
                policy,
                kind=kind,
                subject=str(args.get("subject", "")),
                question=str(args.get("question", "")),
                options=args.get("options"),
                action=args.get("action"),
                evidence=[
                    {**e, "sourceRevision": head_of(self.worktree)}
                    for e in args.get("evidence", [])
                ],
                unit=self.unit_id,
                attempt=self.attempt,
                channel=("tui" if room else "outbox") if asking_now else "none",
                # A consent the host asks for an agent's own tool call (a hook) is the host's
                # question, not the unit's: it spends none of the unit's attention budget.
                raised_by="S3" if host else "S1",
            )
            # The log's lock is held and our lines are not written yet: any answer lands
            # after this offset, so the wait reads only what is appended from here.
            since = _size(self.layout.signals)
        request = asked.request
        outcome = "unavailable"
        if asking_now and request.timeout_ms > 0:
            answered = self._wait_for_answer(request, since)
            if answered is not None:
                return answered
            outcome = "cancelled" if self._cancelled() else "timed-out"
        with self.ledger.transaction() as txn:
            txn.answer_interaction(
                request.id, outcome=outcome, by="S3" if host else "S1", channel="none"
            )
        if not self.contracted:
            # No loop step follows a session unit's question: deliver it now (the outbox,
            # and the owners' channels), so it reaches someone who is not in the room.
            route_and_deliver(self.ledger, self.definition)
        short = asked.obligation.id[:8]
        if host and waits:
            # The tool call it was asked for is not made (silence is never consent); the
            # question stays owed, and the session is not paused over the host's question.
            return {
                "answered": False,
                "outcome": outcome,
                "paused": False,
                "obligation": short,
                "message": f"No answer ({outcome}): the question stays owed as {short}.",
            }
        if not waits:
            return {
                "answered": False,
                "outcome": outcome,
                "recorded": short,
                "continue": True,
                "message": f"recap recorded for a person ({short}); continue with reversible work",
            }
        # The recorded silence is the pause (the log holds it): nothing else needs writing.
        silence = " Silence is not consent: do NOT perform the action." if kind == "consent" else ""
        return {
            "answered": False,
            "outcome": outcome,
            "paused": True,
            "obligation": short,
            "message": f"No answer ({outcome}).{silence} This attempt is paused: tools with an "
            f"effect will be refused. The question is obligation {short}; a person will answer "
            "with `regulator answer`. Stop here.",
        }

    def _wait_for_answer(self, request: InteractionRequest, since: int) -> dict[str, Any] | None:
        """Read what is appended to the log from ``since`` until the request is answered.

        Only the new bytes are read (never a fold of the whole log), so the answer reaches the
        agent within one poll of the person's key press on an instance of any size.
        """
        wait_s = request.timeout_ms / 1000
        shorter: float | None = getattr(self._local, "max_wait_s", None)
        if shorter is not None:
            wait_s = min(wait_s, shorter)
        deadline = time.monotonic() + wait_s
        offset = since
        pending = b""
        answer: dict[str, Any] | None = None
        while time.monotonic() < deadline and not self._cancelled():
            try:
                chunk = read_bytes(self.layout.signals, offset)
            except RecordNotFound:
                chunk = b""
            offset += len(chunk)
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            for line in lines:
                if request.id.encode() not in line and request.obligation_id.encode() not in line:
                    continue
                try:
                    event = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if not isinstance(event, dict):
                    continue
                if (
                    event.get("type") == "interaction-answered"
                    and event.get("requestId") == request.id
                ):
                    if event.get("outcome") != "answered":
                        return None  # another process recorded the silence: nothing to wait for
                    answer = event
                elif (
                    answer is not None
                    and event.get("type") == "obligation-resolved"
                    and event.get("obligationId") == request.obligation_id
                ):
                    return answer_result(request, answer, event)
            if answer is not None and not lines:
                # The answer came without its resolution (an original-era writer): report it.
                return answer_result(request, answer, None)
            self.sleep(ANSWER_POLL_S)
        return None

    # -- durable side effects --------------------------------------------------------------

    def _tool_notify_owner(self, args: dict[str, Any]) -> dict[str, Any]:
        message = str(args.get("message", ""))
        if not 1 <= len(message) <= 500:
            raise ToolRefused("message: 1 to 500 characters")
        journal = EffectJournal(self.layout, self.clock)
        key = effect_key(self.unit_id, "notify_owner", {"message": message})
        begun = journal.begin(
            key, "notify_owner", f"notify the owner of {self.unit_id}", self.unit_id
        )
        if not begun.proceed:
            return {"sent": False, "message": "Already sent this message; not sending it again"}
        at = now_iso(self.clock)
        line = f"{key} {at} {self.unit_id} {visible(' '.join(message.split()))}"
        with locked_log(self.layout.outbox) as out:
            out.append([line.encode()])
        journal.commit(key, f"sent {at}")
        return {"sent": True, "key": key}

    def _tool_remember(self, args: dict[str, Any]) -> dict[str, Any]:
        revision = head_of(self.worktree)
        evidence = [
            EvidenceRef.from_json_dict({**e, "sourceRevision": revision})
            for e in args.get("evidence", [])
        ]
        try:
            entry = MemoryStore(self.layout, self.clock).record(
                subject=str(args.get("subject", "")),
                note=str(args.get("note", "")),
                recorded_by="S1",
                review_by=str(args.get("reviewBy", "")),
                evidence=evidence,
                unit=self.unit_id,
                revision=revision,
                scope=args.get("scope"),
            )
        except (MemoryRefusal, ValueError) as exc:  # the store's own errors keep their root
            raise ToolRefused(str(exc)) from None
        return {"remembered": entry.id}

    def _append_message(self, data: dict[str, Any], model: type[Any]) -> str:
        try:
            message = validate_record(model, data, label=data.get("kind"))
        except ValueError as exc:
            raise ToolRefused(str(exc)) from None
        with self.ledger.transaction() as txn:
            txn.append_raw(message)
        return str(message.id)

    def _tool_report_intelligence(self, args: dict[str, Any]) -> dict[str, Any]:
        if not args.get("evidence"):
            raise ToolRefused("report_intelligence needs at least one piece of evidence")
        data = {
            "id": str(uuid.uuid4()),
            "timestamp": now_iso(self.clock),
            "source": "S4",
            "subject": args.get("subject"),
            "unit": self.unit_id,
            "kind": "intelligence-signal",
            "channel": "intelligence",
            "destination": "S3",
            "severity": args.get("reportedSeverity", "advisory"),
            "observation": args.get("observation"),
            "evidence": args.get("evidence"),
            "claim": args.get("claim"),
            "confidence": args.get("confidence"),
            "observedAt": args.get("observedAt"),
            "expiresAt": args.get("expiresAt"),
            "affectedUnits": args.get("affectedUnits") or None,
        }
        return {
            "recorded": self._append_message(
                {k: v for k, v in data.items() if v is not None}, IntelligenceSignal
            )
        }

    def _tool_propose_policy_change(self, args: dict[str, Any]) -> dict[str, Any]:
        data = {
            "id": str(uuid.uuid4()),
            "timestamp": now_iso(self.clock),
            "source": "S1",
            "subject": args.get("subject"),
            "unit": self.unit_id,
            "kind": "policy-proposal",
            "channel": "proposal",
            "destination": "S5",
            "severity": "info",
            "rationale": args.get("rationale"),
            "requestedChange": args.get("requestedChange"),
            "evidence": args.get("evidence", []),
        }
        return {"recorded": self._append_message(data, PolicyProposal)}
