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
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from regulator.asking import AskRefused, ask_in
from regulator.budget import BudgetGuard
from regulator.clock import Clock, now_iso, system_clock
from regulator.conventions import discover
from regulator.effect_journal import EffectJournal, effect_key
from regulator.execution import ExecutionStore, check_result_report
from regulator.ledger import Ledger
from regulator.memory_store import MemoryStore
from regulator.policy import Definition, PolicyError
from regulator.presence import present
from regulator.protocol.entry import validate_record
from regulator.protocol.evidence import EvidenceRef
from regulator.protocol.execution import (
    FailureObservation,
    ResultReport,
    ResultReportInput,
    WorkContract,
)
from regulator.protocol.interaction import CONTINUES_WITHOUT_ANSWER
from regulator.protocol.messages import IntelligenceSignal, PolicyProposal
from regulator.protocol.policies import InteractionPolicy
from regulator.recovery import cause_from_error
from regulator.regulatory_log import RegulatoryLog
from regulator.store import Layout, locked_log
from regulator.text import visible
from regulator.worktree import head_of, is_dirty

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

OUTPUT_LIMIT = 4000


class ToolRefused(Exception):
    """What the tool tells the agent instead of doing it."""


@dataclass
class Run:
    tool: str
    command: list[str]
    passed: bool
    revision: str
    dirty: bool
    summary: str
    at: str


@dataclass
class SessionState:
    """What the gates know about this attempt."""

    paused: str | None = None
    blocking_asked: int = 0
    reported: bool = False
    runs: list[Run] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)  # obligation ids this attempt opened


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
    ) -> None:
        self.layout = layout
        self.definition = definition
        self.contract = contract
        self.unit_id = contract.unit_id
        self.attempt = attempt
        self.worktree = worktree
        self.grants = set(grants) | {"report_result"}  # a contracted unit can always report
        self.guard = guard
        self.clock = clock
        self.sleep = sleep
        self.wait_for_person = wait_for_person
        self.state = SessionState()
        self.ledger = Ledger(layout, clock=clock)
        self.store = ExecutionStore(layout, clock)

    # -- the gate ---------------------------------------------------------------------------

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run one tool, or refuse it; a refusal or error is also a failure observation."""
        try:
            self._gate(name)
            handler = getattr(self, f"_tool_{name}")
            result: dict[str, Any] = handler(args)
            return result
        except ToolRefused as exc:
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
        if effect == "read-only":
            return
        if self.state.paused is not None:
            raise ToolRefused(
                f"paused: {self.state.paused}. Only pure reads remain in this attempt; "
                "a person will answer with `regulator answer`. Stop here."
            )
        if self.guard is not None and self.guard.exhausted is not None:
            raise ToolRefused(
                f"the budget guard halted this attempt ({self.guard.exhausted.dimension}); "
                "no tool with an effect runs any more"
            )

    def _observe(self, tool: str, message: str) -> None:
        cause = "invalid-report" if tool == "report_result" else cause_from_error(message)
        self.store.record_observation(
            FailureObservation.model_validate(
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
            raise ToolRefused(f"command not found: {command[0]}") from None
        except subprocess.TimeoutExpired:
            raise ToolRefused(f"{' '.join(command)} timed out after 600 s") from None
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
        self.state.runs.append(run)
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
        if self.state.reported:
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
        self.state.reported = True
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
        if kind not in CONTINUES_WITHOUT_ANSWER:
            raise ToolRefused(
                f"kind {kind!r} is not one of recap, choice, clarification, consent, uat"
            )
        policy = self._interaction_policy()
        waits = not CONTINUES_WITHOUT_ANSWER[kind]  # type: ignore[index]
        cap = policy.attention.blocking_per_attempt if policy is not None else 0
        # Without a valid policy nobody is asked and every question pauses (the original's rule).
        if waits and policy is not None and self.state.blocking_asked >= cap:
            raise ToolRefused(
                f"the attention budget is spent: {cap} blocking question(s) per attempt. Record "
                "the decision as residualUncertainty in your report, where the routing policy "
                "decides what it costs, or offer it as a recap"
            )
        someone = bool(present(self.layout, self.clock)) and policy is not None
        with self.ledger.transaction() as txn:
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
                channel="tui" if someone and self.wait_for_person else "none",
            )
        if waits:
            self.state.blocking_asked += 1
        self.state.asked.append(asked.obligation.id)
        request = asked.request
        outcome = "unavailable"
        if someone and self.wait_for_person and request.timeout_ms > 0:
            answered = self._wait_for_answer(request.id, request.timeout_ms)
            if answered is not None:
                return answered
            outcome = "timed-out"
        with self.ledger.transaction() as txn:
            txn.answer_interaction(request.id, outcome=outcome, by="S1", channel="none")
        short = asked.obligation.id[:8]
        if not waits:
            return {
                "answered": False,
                "recorded": short,
                "continue": True,
                "message": f"recap recorded for a person ({short}); continue with reversible work",
            }
        self.state.paused = f"{kind} unanswered: {request.subject} (obligation {short})"
        silence = " Silence is not consent: do NOT perform the action." if kind == "consent" else ""
        return {
            "answered": False,
            "paused": True,
            "obligation": short,
            "message": f"No answer ({outcome}).{silence} This attempt is paused: tools with an "
            f"effect will be refused. The question is obligation {short}; a person will answer "
            "with `regulator answer`. Stop here.",
        }

    def _wait_for_answer(self, request_id: str, timeout_ms: int) -> dict[str, Any] | None:
        log = RegulatoryLog(self.layout)
        deadline = time.monotonic() + timeout_ms / 1000
        while time.monotonic() < deadline:
            log.refresh()
            for interaction in log.interactions.values():
                if interaction.request.id != request_id:
                    continue
                for a in interaction.answers:
                    if a.outcome == "answered":
                        state = log.obligations.get(interaction.request.obligation_id)
                        disposition = state.disposition if state is not None else None
                        refused = (
                            disposition == "rejected" and interaction.request.kind == "consent"
                        )
                        return {
                            "answered": True,
                            "by": a.by,
                            "answer": a.answer,
                            "disposition": disposition,
                            "message": (
                                f"Consent refused by {a.by}: do not perform the action."
                                if refused
                                else f"{a.by} answered: {a.answer}"
                            ),
                        }
            self.sleep(0.1)
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
            EvidenceRef.model_validate({**e, "sourceRevision": revision})
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
        except Exception as exc:
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
