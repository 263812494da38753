"""What a person does to an obligation: acknowledge, resolve, escalate, answer, decide for S5.

The CLI and the control room both call these functions, so both refuse exactly the same things
with exactly the same words. Every check runs inside the ledger's transaction, against the log
as it stands under the lock, and the authority check comes before anything is appended: a
refusal writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from regulator.protocol.obligations import ObligationState
from regulator.protocol.policies import InteractionPolicy
from regulator.protocol.vocab import CONSUMERS, DISPOSITIONS, TERMINAL_STATUSES
from regulator.rules.answers import AnswerRefused, interpret, with_note
from regulator.rules.authority import check_disposition_authority, may_act_as_s5, owed_to_s5
from regulator.rules.ledger import Actor, Ledger, LedgerError, Transaction, write_addressee


class Refusal(LedgerError):
    """A person may not do this (authority), or the record does not allow it."""


def _authorize(
    txn: Transaction,
    policy: InteractionPolicy,
    by: str,
    actor: Actor,
    *,
    severity: str,
    disposition: str | None = None,
    s5: bool = False,
) -> None:
    refusal = check_disposition_authority(
        policy, by, severity=severity, disposition=disposition, s5=s5, os_user=actor.os_user
    )
    if refusal is not None:
        raise Refusal(refusal)
    if s5:
        # The ledger lets an obligation leave S5 only in a transaction that passed this check.
        txn.s5_authorized = True


def _s5(txn: Transaction, state: ObligationState, policy: InteractionPolicy) -> bool:
    return owed_to_s5(txn.log.obligations, state, policy)


def acknowledge(
    ledger: Ledger,
    policy: InteractionPolicy,
    ref: str,
    by: str,
    actor: Actor,
    note: str | None = None,
) -> ObligationState:
    """Seen by someone who may handle it: not agreement, and the veto stands."""
    with ledger.transaction(actor) as txn:
        state = txn.get_open(ref)
        # Any listed person may acknowledge anything: the original checks at info.
        _authorize(txn, policy, by, actor, severity="info")
        return txn.acknowledge(state.id, by, note)


def resolve(
    ledger: Ledger,
    policy: InteractionPolicy,
    ref: str,
    by: str,
    actor: Actor,
    *,
    disposition: str,
    rationale: str,
) -> ObligationState:
    if disposition not in DISPOSITIONS:
        raise Refusal(f"disposition {disposition!r} is not one of {', '.join(DISPOSITIONS)}")
    if not rationale.strip():
        raise Refusal("a disposition needs a rationale")
    with ledger.transaction(actor) as txn:
        state = txn.get_open(ref)
        # What is owed to S5 (or was moved away from S5 by someone who may not act as S5) is
        # decided only by a person who may act as S5.
        _authorize(
            txn,
            policy,
            by,
            actor,
            severity=state.severity,
            disposition=disposition,
            s5=_s5(txn, state, policy),
        )
        return txn.resolve(state.id, by, disposition, rationale)


@dataclass(frozen=True)
class Escalation:
    predecessor: ObligationState
    successor: ObligationState
    # The one person the successor is owed to (``addressees.ndjson``), or None: every person.
    person: str | None = None


def addressee_refusal(policy: InteractionPolicy, person: str, severity: str) -> str | None:
    """Why ``person`` may not be the one an obligation of ``severity`` is owed to, else None.

    The authority check a resolution makes, for the addressee: listed, and allowed to
    disposition at that severity (``resolveUpTo``). The ``osUsers`` check is the escalator's,
    not the addressee's: the addressee does not act here.
    """
    refusal = check_disposition_authority(policy, person, severity=severity)
    if refusal is None:
        return None
    return f"--person: {refusal}"


def escalate(
    ledger: Ledger,
    policy: InteractionPolicy,
    ref: str,
    by: str,
    actor: Actor,
    *,
    to: str,
    rationale: str,
    person: str | None = None,
) -> Escalation:
    """Close ``ref`` as escalated to a successor owed to ``to``; with ``person`` (only when
    ``to`` is ``human``), owed to that one person, recorded in ``addressees.ndjson``."""
    if to not in CONSUMERS:
        raise Refusal(f"consumer {to!r} is not one of {', '.join(CONSUMERS)}")
    if not rationale.strip():
        raise Refusal("an escalation needs a rationale")
    if person is not None and to != "human":
        raise Refusal(f"--person: only an escalation --to human is owed to a person, not {to}")
    with ledger.transaction(actor) as txn:
        state = txn.get_open(ref)
        _authorize(txn, policy, by, actor, severity=state.severity)
        if person is not None:
            # The successor keeps the original's severity (``Transaction.escalate``).
            refused = addressee_refusal(policy, person, state.severity)
            if refused is not None:
                raise Refusal(refused)
        # Moving what S5 decides to anyone else is itself S5's decision; within S5 it is not.
        if to != "S5" and _s5(txn, state, policy):
            if not may_act_as_s5(policy, by):
                raise Refusal(
                    f"{by} may not act as S5 ({policy.label}): obligation {state.id[:8]} is "
                    f"S5's to decide, and escalating it to {to} would hand that decision over"
                )
            txn.s5_authorized = True
        successor = txn.escalate(state.id, by, rationale, to=to)
    if person is not None:
        write_addressee(ledger.layout, successor.id, person, by, ledger.clock)
    return Escalation(state, successor, person)


@dataclass(frozen=True)
class Answered:
    obligation: ObligationState
    kind: str
    disposition: str
    answer: str


def answer(
    ledger: Ledger,
    policy: InteractionPolicy,
    ref: str,
    by: str,
    actor: Actor,
    text: str,
    *,
    channel: str = "cli",
    note: str | None = None,
) -> Answered:
    """A person's answer to a unit's question: recorded, and the obligation resolved by it.

    The answer's meaning is mechanical: a consent or uat counts as yes only on a yes-word; a
    choice must be one of the options offered. An empty answer is no answer at all.
    """
    if not text.strip():
        raise Refusal("an answer cannot be empty: silence is not an answer")
    with ledger.transaction(actor) as txn:
        state = txn.get(ref)
        short = state.id[:8]
        if state.concern != "interaction":
            raise Refusal(
                f"obligation {short} is {state.concern}, not a question a unit asked; "
                "use `obligation resolve`"
            )
        if state.status in TERMINAL_STATUSES:
            raise Refusal(f"obligation {short} is {state.status}")
        interaction = txn.log.interaction_for(state.id)
        if interaction is None:
            raise Refusal(f"obligation {short} has no interaction request in the log")
        request = interaction.request
        try:
            meaning = interpret(request.kind, text, request.options)
        except AnswerRefused as exc:  # unclear: neither yes nor no, not one option
            raise Refusal(str(exc)) from None
        _authorize(txn, policy, by, actor, severity=state.severity, s5=_s5(txn, state, policy))
        said = with_note(meaning.answer, note)  # a reason travels with the answer
        txn.answer_interaction(request.id, outcome="answered", by=by, channel=channel, answer=said)
        txn.resolve(state.id, by, meaning.disposition, said)
        return Answered(state, request.kind, meaning.disposition, said)


def decide_proposal(
    ledger: Ledger,
    policy: InteractionPolicy,
    ref: str,
    by: str,
    actor: Actor,
    *,
    accept: bool,
    rationale: str,
) -> ObligationState:
    """The S5 decision on a policy proposal: only for a person with ``actAsS5``."""
    with ledger.transaction(actor) as txn:
        state = txn.get_open(ref)
        if state.concern != "policy-proposal" or state.consumer != "S5":
            raise Refusal(
                f"obligation {state.id[:8]} is {state.concern} owed to {state.consumer}; "
                "`identity accept|reject` decides proposals owed to S5"
            )
        _authorize(txn, policy, by, actor, severity=state.severity, s5=True)
        return txn.resolve(state.id, by, "accepted" if accept else "rejected", rationale)
