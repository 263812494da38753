"""Who may disposition: the check every person-made write passes before anything is written.

The four refusals are the original's, in its order (docs/design.md#authority). Ours comes right
after the name check: a person the policy lists with ``osUsers`` may be named only by one of
those OS users, so on a shared machine naming someone else is refused, not merely recorded.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping
from typing import TYPE_CHECKING

from regulator.protocol.obligations import ObligationState
from regulator.protocol.vocab import severity_at_least

if TYPE_CHECKING:
    # The policy's structs are the caller's to import: a command that only reads the log
    # (``obligations``, the room's stream) takes process_os_user from here without them.
    from regulator.protocol.policies import InteractionPolicy


def process_os_user() -> str:
    """This process's user as the password database names its real uid.

    Not ``getpass.getuser()``: that reads $LOGNAME and $USER first, which anyone can set, and
    the OS user is what ``osUsers`` authority and provenance rest on.
    """
    uid = os.getuid()
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:  # no passwd entry (some containers): the number is all there is
        return str(uid)


def check_disposition_authority(
    policy: InteractionPolicy,
    by: str,
    *,
    severity: str,
    disposition: str | None = None,
    s5: bool = False,
    os_user: str | None = None,
) -> str | None:
    """The refusal text when ``by`` may not make this disposition, else None."""
    person = policy.person(by)
    if person is None:
        return (
            f'"{by}" is not a person the interaction policy ({policy.label}) names; '
            "a name not listed may disposition nothing"
        )
    if person.os_users is not None and os_user is not None and os_user not in person.os_users:
        allowed = ", ".join(person.os_users) or "nobody"
        return (
            f"{by} may be named only by the OS user(s) {allowed} ({policy.label}); "
            f'this is OS user "{os_user}"'
        )
    if not severity_at_least(person.resolve_up_to, severity):
        return f"{by} may disposition up to {person.resolve_up_to}; this is {severity}"
    if disposition == "accepted-risk" and not person.accept_risk:
        return f"{by} may not accept risk ({policy.label})"
    if s5 and not person.act_as_s5:
        return f"{by} may not act as S5 ({policy.label})"
    return None


def may_act_as_s5(policy: InteractionPolicy, name: str | None) -> bool:
    person = policy.person(name) if name else None
    return person is not None and person.act_as_s5


def owed_to_s5(
    obligations: Mapping[str, ObligationState], state: ObligationState, policy: InteractionPolicy
) -> bool:
    """Whether deciding ``state`` is S5's: it is owed to S5, or it took over from an obligation
    that was S5's and was moved (escalated, superseded) by someone who may not act as S5.

    A move away from S5 is refused at write time; this also holds for logs written before
    that, or by another tool, so that no chain of moves launders what only S5 decides.
    """
    if state.consumer == "S5":
        return True
    predecessors: dict[str, list[ObligationState]] = {}
    for o in obligations.values():
        if o.successor is not None:
            predecessors.setdefault(o.successor, []).append(o)
    seen = {state.id}
    pending = [state.id]
    while pending:
        for p in predecessors.get(pending.pop(), ()):
            if p.id in seen or may_act_as_s5(policy, p.closed_by):
                continue  # a move made by someone who may act as S5 stands
            if p.consumer == "S5":
                return True
            seen.add(p.id)
            pending.append(p.id)
    return False


def allowed_dispositions(
    policy: InteractionPolicy, by: str, severity: str, dispositions: tuple[str, ...]
) -> dict[str, str | None]:
    """Per disposition, None when ``by`` may use it, else the refusal: for pickers."""
    return {
        d: check_disposition_authority(policy, by, severity=severity, disposition=d)
        for d in dispositions
    }
