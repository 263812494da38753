"""Who may disposition: the check every person-made write passes before anything is written.

The four refusals are the original's, in its order (upstream-core §4.3). Ours comes right
after the name check: a person the policy lists with ``osUsers`` may be named only by one of
those OS users, so on a shared machine naming someone else is refused, not merely recorded.
"""

from __future__ import annotations

from regulator.protocol.policies import InteractionPolicy
from regulator.protocol.vocab import severity_at_least


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


def allowed_dispositions(
    policy: InteractionPolicy, by: str, severity: str, dispositions: tuple[str, ...]
) -> dict[str, str | None]:
    """Per disposition, None when ``by`` may use it, else the refusal: for pickers."""
    return {
        d: check_disposition_authority(policy, by, severity=severity, disposition=d)
        for d in dispositions
    }
