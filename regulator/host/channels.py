"""Reaching a person where they are: each owner's channels, beside the outbox (ours).

The outbox delivery (:mod:`regulator.host.delivery`) stays the original's: one line per
delivery, an ``obligation-delivered`` event in the log. On top of it, each delivery of an
obligation owed to ``human`` is sent to the channels of every person who may disposition it
(``people[].channels`` in the interaction policy; docs/reaching-people.md), or of the one person
it was escalated to (``addressees.ndjson``), once:

* One effect per (obligation, delivery number, person, channel): the key
  ``channel:<obligationId>:<n>:<person>:<channel>`` goes through the effect journal
  (``intended`` before sending, ``committed`` after, with ``sent …`` or ``failed …``).
* Each send is recorded in ``.regulator/deliveries.ndjson`` (a file of ours: the original
  has no such record), with where it went and whether it failed; never a secret.
* A send interrupted between sending and recording leaves its key ``intended``. Nothing can
  ask Slack or a mail server whether it arrived, so reconciliation records the outcome as
  unknown and never sends it again: at most once, never twice. A send that failed is not
  retried for that delivery; the next reminder is a new delivery and tries again.
* A channel in its quiet hours is skipped for now; when they end, the latest delivery still
  unsent to it goes out (one message, not one per delivery missed).

A whole pass holds the lock of ``deliveries.ndjson``, never the regulatory log's, so a slow
receiver never stops anyone answering. Lock order: deliveries → effects → answer codes (and
answer links).
"""

from __future__ import annotations

import copy
import os
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, time
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit
from zoneinfo import ZoneInfo

import msgspec
import orjson

from regulator.host import answer_codes, answer_links
from regulator.host.instance import read_canaries
from regulator.protocol.clock import Clock, now_iso, system_clock
from regulator.protocol.credentials import SECRET_REFERENCE
from regulator.protocol.errors import HostFailure
from regulator.protocol.obligations import ObligationState
from regulator.protocol.policies import Channel, InteractionPolicy, Person
from regulator.protocol.text import visible
from regulator.protocol.vocab import TERMINAL_STATUSES, severity_at_least
from regulator.rules.authority import check_disposition_authority, owed_to_s5
from regulator.rules.effect_journal import EffectJournal, EffectState
from regulator.rules.ledger import Ledger, read_addressees
from regulator.rules.regulatory_log import RegulatoryLog
from regulator.store import Layout, RecordNotFound, StoreError, dumps_line, locked_log, read_bytes

TOOL = "channel"
KEY_PREFIX = "channel:"
DELIVERIES_FILE = "deliveries.ndjson"
SECRETS_ENV = "REGULATOR_SECRETS_FILE"
REDACTED = "«redacted»"
SEND_TIMEOUT_S = 10

Env = Mapping[str, str]


class SendFailed(HostFailure):
    """A channel did not take the message; the text names why, without any secret."""


class SecretMissing(SendFailed):
    """A ``${NAME}`` nobody set: neither in the environment nor in a secrets file."""


def deliveries_path(layout: Layout) -> Path:
    return layout.state / DELIVERIES_FILE


# --------------------------------------------------------------------------------------------
# Secrets


def _secrets_file_values(path_text: str, root: Path | None) -> dict[str, str]:
    """``NAME=value`` lines of a secrets file; refused when it lies inside the repository."""
    path = Path(path_text).expanduser()
    if root is not None:
        try:
            path.resolve().relative_to(root.resolve())
        except ValueError:
            pass
        else:
            raise SendFailed(
                f"secretsFile {path_text} is inside the repository; keep it outside, where "
                "no commit can pick it up"
            )
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SendFailed(f"secretsFile {path_text}: {exc.strerror or exc}") from None
    values: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[name.strip()] = value
    return values


def _secret_sources(channel: Channel, env: Env) -> list[str]:
    files = [channel.secrets_file] if channel.secrets_file else []
    if env.get(SECRETS_ENV):
        files.append(env[SECRETS_ENV])
    return files


def resolve(text: str, channel: Channel, env: Env, root: Path | None) -> tuple[str, list[str]]:
    """``text`` with every ``${NAME}`` replaced, and the values used (to scrub from errors)."""
    names = SECRET_REFERENCE.findall(text)
    if not names:
        return text, []
    found: dict[str, str] = {}
    file_values: dict[str, str] | None = None
    for name in names:
        if name in env:
            found[name] = env[name]
            continue
        if file_values is None:
            file_values = {}
            for source in _secret_sources(channel, env):
                file_values = {**_secrets_file_values(source, root), **file_values}
        if name not in file_values:
            raise SecretMissing(
                f"${{{name}}} is set neither in the environment nor in a secrets file"
            )
        found[name] = file_values[name]
    return SECRET_REFERENCE.sub(lambda m: found[m.group(1)], text), list(found.values())


def channel_secrets(policy: InteractionPolicy, env: Env | None = None) -> list[str]:
    """Every secret value the policy's channels refer to that can be found: for redaction."""
    env = os.environ if env is None else env
    values: list[str] = []
    for person in policy.people:
        for channel in person.channels or []:
            for text in (channel.url, channel.to, *(channel.command or [])):
                if text is None:
                    continue
                try:
                    values += resolve(text, channel, env, None)[1]
                except SendFailed:
                    continue
    return [v for v in values if v]


def instance_channel_secrets(layout: Layout) -> list[str]:
    """:func:`channel_secrets` for the instance's own definition; none if it cannot load."""
    from regulator.policy import PolicyError, load_definition

    try:
        policy = load_definition(layout.root).interaction
    except (PolicyError, StoreError, OSError, ValueError):
        return []
    if not any(p.channels for p in policy.people):
        return []
    return channel_secrets(policy)


class Scrubber:
    """Removes secrets and canaries from text before it is sent or recorded."""

    def __init__(
        self,
        values: Iterable[str],
        extra: Callable[[str], str] | None = None,
        *,
        min_chars: int = 8,
    ) -> None:
        # Shorter values would blank ordinary words (a user name "alice") in every message.
        self.values = sorted({v for v in values if len(v) >= min_chars}, key=len, reverse=True)
        self.extra = extra

    def __call__(self, text: str) -> str:
        for value in self.values:
            text = text.replace(value, REDACTED)
        return self.extra(text) if self.extra is not None else text


def scrub_url(url: str) -> str:
    """A URL as a record may show it: no user, password or query."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "?"
    if not parts.scheme:
        return SECRET_REFERENCE.sub(lambda m: m.group(0), url.split("?", 1)[0])
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


# --------------------------------------------------------------------------------------------
# Who, where and when


def owners(
    policy: InteractionPolicy,
    log: RegulatoryLog,
    o: ObligationState,
    addressee: str | None = None,
) -> list[Person]:
    """The people who may disposition ``o``: those its delivery reaches.

    With an ``addressee`` (``addressees.ndjson``: ``o`` was escalated to that one person),
    only that person, if they still may; if the policy changed since and they may not, every
    person who may, so that what is owed still reaches someone entitled to decide it.
    """
    s5 = owed_to_s5(log.obligations, o, policy)
    allowed = [
        p
        for p in policy.people
        if check_disposition_authority(policy, p.name, severity=o.severity, s5=s5) is None
    ]
    named = [p for p in allowed if p.name == addressee]
    return named if named else allowed


def wants(channel: Channel, o: ObligationState, kind: str | None) -> bool:
    """Whether the channel takes this obligation: its severity and, when listed, its kind."""
    return takes(channel, o.severity, o.concern, kind)


def takes(channel: Channel, severity: str, concern: str, kind: str | None) -> bool:
    """:func:`wants` for an obligation of this severity, concern and question kind."""
    if not severity_at_least(severity, channel.min_severity):
        return False
    if channel.kinds is None:
        return True
    return concern in channel.kinds or (kind is not None and kind in channel.kinds)


def _clock(text: str) -> time:
    hours, minutes = text.split(":")
    return time(int(hours), int(minutes))


def in_quiet_hours(channel: Channel, now: datetime, severity: str) -> bool:
    """Whether ``now`` falls in the channel's quiet hours (and ``severity`` does not break
    through them)."""
    quiet = channel.quiet_hours
    if quiet is None:
        return False
    if quiet.unless is not None and severity_at_least(severity, quiet.unless):
        return False
    local = now.astimezone(ZoneInfo(quiet.timezone)) if quiet.timezone else now.astimezone()
    at, start, end = (
        local.time().replace(second=0, microsecond=0),
        _clock(quiet.start),
        _clock(quiet.end),
    )
    if start == end:
        return False
    if start < end:
        return start <= at < end
    return at >= start or at < end  # a window across midnight


# --------------------------------------------------------------------------------------------
# The message


@dataclass(frozen=True, slots=True)
class Message:
    title: str
    body: str
    obligation_id: str
    reminder: bool
    code: str | None = None
    # Ours: the one-time link to this person's answer page (``serve --http``), if any.
    link: str | None = None


def compose(
    o: ObligationState,
    person: str,
    *,
    reminder: bool,
    code: str | None,
    instance: str,
    kind: str | None,
    options: list[str] | None,
    action: str | None,
    scrub: Callable[[str], str],
    link: str | None = None,
) -> Message:
    """The text a person receives. Record text is an agent's: scrubbed, escapes made visible."""

    def clean(text: str) -> str:
        return visible(scrub(text.replace("\r", " ").replace("\n", " ")))

    id8 = o.id[:8]
    veto = " veto" if o.blocks else ""
    what = kind if kind is not None else o.concern
    title = (
        f"{'REMINDER: ' if reminder else ''}regulator: {o.severity}{veto} {what} on "
        f"{clean(o.unit) if o.unit else 'no unit'}"
    )
    lines = [clean(o.subject)]
    if o.question:
        lines.append(clean(o.question))
    if options:
        lines.append("options: " + " | ".join(f"{i}. {clean(x)}" for i, x in enumerate(options, 1)))
    if action:
        lines.append(f"a yes authorizes: {clean(action)}")
    lines.append(f"instance: {clean(instance)}")
    if o.concern == "interaction":
        if link:
            lines.append(f"answer here: {link}")
        with_code = f" --code {code}" if code else ""
        lines.append(f"answer: regulator answer {id8} --by {clean(person)}{with_code} --answer …")
        if code and link:
            lines.append(
                "the link and the code are yours alone, work once, and only for this question"
            )
        elif code or link:
            what = "code" if code else "link"
            lines.append(f"the {what} is yours alone, works once, and only for this question")
    else:
        lines.append(
            f"resolve: regulator obligation resolve {id8} --by {clean(person)} "
            "--disposition … --rationale …"
        )
    answer_with = "the link or the command above" if link else "the command above"
    lines.append(f"replies to this message are not read: answer with {answer_with}")
    return Message(title, "\n".join(lines), o.id, reminder, code, link)


# --------------------------------------------------------------------------------------------
# Sending

#: ``(channel, resolved url or None, message) → None``; raises :class:`SendFailed`.
Sender = Callable[[Channel, str | None, Message], None]


def apprise_url(channel: Channel, url: str) -> str:
    """The URL apprise is given for a channel's resolved ``url``."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if channel.type == "slack" and scheme in ("http", "https"):
        if parts.hostname == "hooks.slack.com":
            return url  # apprise knows Slack's own webhooks
        # A Slack-compatible incoming webhook elsewhere: POST {"text": …} as JSON.
        query = [*parse_qsl(parts.query), (":message", "text"), (":title", ""), (":type", "")]
        query.append((":version", ""))
        json_scheme = "jsons" if scheme == "https" else "json"
        return urlunsplit((json_scheme, parts.netloc, parts.path, urlencode(query), ""))
    if channel.type == "webhook" and scheme in ("http", "https"):
        return urlunsplit(("jsons" if scheme == "https" else "json", *parts[1:]))
    if channel.type == "email" and channel.to is not None:
        query = parse_qsl(parts.query)
        if not any(name == "to" for name, _ in query):
            query.append(("to", channel.to))
        return urlunsplit((*parts[:3], urlencode(query), parts.fragment))
    return url


def with_link(channel: Channel, target: str, link: str | None) -> str:
    """The apprise URL ``target`` made to carry the answer link as the service's own action:
    ntfy's ``view`` action (and a click on the notification), a webhook's ``answerUrl``."""
    if link is None:
        return target
    parts = urlsplit(target)
    query = parse_qsl(parts.query, keep_blank_values=True)
    scheme = parts.scheme.lower()
    if channel.type == "ntfy" and scheme in ("ntfy", "ntfys"):
        query += [("click", link), ("actions", f"view, Answer, {link}, clear=true")]
    elif channel.type == "webhook" and scheme in ("json", "jsons"):
        query.append((":answerUrl", link))
    else:
        return target
    # %20, not "+": apprise reads the query back without turning "+" into a space.
    return urlunsplit((*parts[:3], urlencode(query, quote_via=quote), parts.fragment))


def _send_slack_button(url: str, message: Message, link: str) -> None:
    """A Slack incoming webhook (or a compatible one): the text, and a link button to the
    answer page. Plain text blocks: an agent's words are never read as Slack markup."""
    import urllib.error
    import urllib.request

    text = f"{message.title}\n{message.body}"
    payload = {
        "text": text,
        "blocks": [
            {"type": "section", "text": {"type": "plain_text", "text": text[:2900]}},
            {
                "type": "actions",
                "elements": [
                    {
                        "type": "button",
                        "text": {"type": "plain_text", "text": "Answer"},
                        "url": link,
                        "action_id": "regulator-answer",
                    }
                ],
            },
        ],
    }
    request = urllib.request.Request(
        url,
        data=orjson.dumps(payload),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=SEND_TIMEOUT_S) as response:
            response.read(4096)
    except urllib.error.HTTPError as exc:
        raise SendFailed(f"the webhook answered HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise SendFailed(f"the webhook could not be reached: {reason}") from None


def _send_apprise(channel: Channel, url: str, message: Message) -> None:
    import logging

    import apprise

    scheme = urlsplit(url).scheme.lower()
    if message.link is not None and channel.type == "slack" and scheme in ("http", "https"):
        _send_slack_button(url, message, message.link)
        return
    target = apprise.Apprise()
    if not target.add(with_link(channel, apprise_url(channel, url), message.link)):
        raise SendFailed(f"apprise does not understand the {channel.type} URL")
    body = message.body
    if channel.type in ("slack", "webhook"):
        body = f"{message.title}\n{message.body}"
    with apprise.LogCapture(level=logging.WARNING) as captured:  # type: ignore[no-untyped-call]
        # Plain text: an agent's words are never read as markup or HTML by a mail client.
        ok = target.notify(title=message.title, body=body, body_format=apprise.NotifyFormat.TEXT)
    if not ok:
        said = [line for line in captured.getvalue().splitlines() if line.strip()]
        reason = said[-1].split(" - ", 2)[-1] if said else "the service refused it"
        raise SendFailed(reason)


def _send_command(command: list[str], message: Message) -> None:
    try:
        proc = subprocess.run(
            [*command, message.title, message.body],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=SEND_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise SendFailed(f"{command[0]} did not finish in {SEND_TIMEOUT_S} s") from None
    except OSError as exc:
        raise SendFailed(f"{command[0]}: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
        raise SendFailed(
            f"{command[0]} exited {proc.returncode}" + (f": {detail[0]}" if detail else "")
        )


def default_sender(channel: Channel, url: str | None, message: Message) -> None:
    """Send through apprise, or for a desktop channel without a URL through a command."""
    if channel.type == "desktop" and url is None:
        _send_command(channel.command or ["notify-send", "--app-name=regulator"], message)
        return
    if url is None:
        raise SendFailed(f"a {channel.type} channel needs a url")
    _send_apprise(channel, url, message)


# --------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True, slots=True)
class ChannelDelivery:
    """One send (or one interrupted send settled by reconciliation)."""

    at: str
    key: str
    obligation_id: str
    delivery: int
    reminder: bool
    person: str
    channel: str
    type: str
    target: str
    outcome: str  # sent | failed | unknown
    error: str | None = None
    code: bool = False
    link: bool = False  # the message carried a link to the answer page (never the link)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "at": self.at,
            "key": self.key,
            "obligationId": self.obligation_id,
            "delivery": self.delivery,
            "reminder": self.reminder,
            "person": self.person,
            "channel": self.channel,
            "type": self.type,
            "target": self.target,
            "outcome": self.outcome,
        }
        if self.error is not None:
            out["error"] = self.error
        if self.code:
            out["code"] = True
        if self.link:
            out["link"] = True
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChannelDelivery:
        return cls(
            at=str(data["at"]),
            key=str(data["key"]),
            obligation_id=str(data["obligationId"]),
            delivery=int(data["delivery"]),
            reminder=bool(data["reminder"]),
            person=str(data["person"]),
            channel=str(data["channel"]),
            type=str(data["type"]),
            target=str(data["target"]),
            outcome=str(data["outcome"]),
            error=None if data.get("error") is None else str(data["error"]),
            code=bool(data.get("code", False)),
            link=bool(data.get("link", False)),
        )


def read_deliveries(layout: Layout) -> tuple[list[ChannelDelivery], list[str]]:
    """Every record of ``deliveries.ndjson`` and a problem per line that is not one."""
    path = deliveries_path(layout)
    try:
        data = read_bytes(path)
    except RecordNotFound:
        return [], []
    records: list[ChannelDelivery] = []
    problems: list[str] = []
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            records.append(ChannelDelivery.from_json(orjson.loads(raw)))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            problems.append(f"{layout.label(path)}:{number}: not a delivery record ({exc})")
    return records, problems


def target_of(channel: Channel) -> str:
    """Where a channel sends, as records show it: the URL's template without user, password
    or query (``${NAME}`` is never expanded here), an email's address, a desktop command."""
    if channel.type == "desktop" and channel.url is None:
        return (channel.command or ["notify-send"])[0]
    shown = scrub_url(channel.url or "")
    if channel.type == "email" and channel.to:
        return f"{shown} → {channel.to}"
    return shown


# --------------------------------------------------------------------------------------------
# The pass


def channel_key(obligation_id: str, delivery: int, person: str, channel: str) -> str:
    return f"{KEY_PREFIX}{obligation_id}:{delivery}:{person}:{channel}"


def _is_channel_key(state: EffectState) -> bool:
    return state.tool == TOOL and state.key.startswith(KEY_PREFIX)


def _parse_key(key: str) -> tuple[str, int, str, str] | None:
    body = key.removeprefix(KEY_PREFIX)
    # Person names may hold ':'; the obligation id, number and channel name do not.
    head, _, channel = body.rpartition(":")
    obligation_id, _, rest = head.partition(":")
    number, _, person = rest.partition(":")
    if not (obligation_id and number.isdigit() and person and channel):
        return None
    return obligation_id, int(number), person, channel


@dataclass
class FanOut:
    sent: list[ChannelDelivery] = field(default_factory=list)
    failed: list[ChannelDelivery] = field(default_factory=list)
    reconciled: list[ChannelDelivery] = field(default_factory=list)
    deferred: int = 0  # in quiet hours: sent when they end


def has_channels(policy: InteractionPolicy) -> bool:
    return any(p.channels for p in policy.people)


def fan_out(
    ledger: Ledger,
    journal: EffectJournal,
    layout: Layout,
    policy: InteractionPolicy,
    *,
    clock: Clock | None = None,
    sender: Sender | None = None,
    env: Env | None = None,
    scrub: Callable[[str], str] | None = None,
    answer_url: str | None = None,
) -> FanOut:
    """Send the latest delivery of every open obligation owed to a person to each owner's
    channels that take it and have not had it. Idempotent; see the module's docstring.

    A question's message carries a one-time link to its answer page when ``answer_url`` is
    given, or else when a ``regulator serve --http`` of this instance is running."""
    result = FanOut()
    if not has_channels(policy):
        return result
    clock = clock if clock is not None else ledger.clock
    if answer_url is None:
        from regulator.host.reach import serving

        live = serving(layout, clock)
        answer_url = live.answer_url if live is not None else None
    send = sender if sender is not None else default_sender
    env = os.environ if env is None else env
    secrets = channel_secrets(policy, env)
    scrubber = Scrubber([*secrets, *read_canaries(layout)], scrub)
    with locked_log(deliveries_path(layout)) as out:
        # Nobody else is mid-send: this lock is held for every send.
        result.reconciled = _reconcile(journal, layout, out, policy, clock)
        log = ledger.refresh()
        codes: dict[tuple[str, int, str], str] = {}
        addressees = read_addressees(layout)
        for o in list(log.obligations.values()):
            if o.consumer != "human" or o.status in TERMINAL_STATUSES or not o.deliveries:
                continue
            number = len(o.deliveries) - 1
            reminder = number > 0
            interaction = log.interaction_for(o.id) if o.concern == "interaction" else None
            request = interaction.request if interaction is not None else None
            kind = request.kind if request is not None else None
            for person in owners(policy, log, o, addressees.get(o.id)):
                for channel in person.channels or []:
                    if not wants(channel, o, kind) or (reminder and not channel.reminders):
                        continue
                    key = channel_key(o.id, number, person.name, channel.label)
                    state = journal.state(key)
                    if state is not None and state.done:
                        continue
                    if in_quiet_hours(channel, clock(), o.severity):
                        result.deferred += 1
                        continue
                    verb = "remind" if reminder else "deliver"
                    begun = journal.begin(
                        key,
                        TOOL,
                        f"{verb} obligation {o.id[:8]} to {person.name}'s {channel.label}",
                        o.unit,
                    )
                    if not begun.proceed:
                        continue
                    code: str | None = None
                    if request is not None:
                        code = codes.get((o.id, number, person.name))
                        if code is None:
                            code = answer_codes.issue(layout, o.id, person.name, key, clock)
                            codes[(o.id, number, person.name)] = code
                    link: str | None = None
                    if request is not None and answer_url is not None:
                        token = answer_links.issue(
                            layout, o.id, person.name, channel.label, key, clock
                        )
                        link = answer_links.url_for(answer_url, token)
                    message = compose(
                        o,
                        person.name,
                        reminder=reminder,
                        code=code,
                        instance=f"{os.uname().nodename}:{layout.root}",
                        kind=kind,
                        options=request.options if request is not None else None,
                        action=request.action if request is not None else None,
                        scrub=scrubber,
                        link=link,
                    )
                    record = _send_one(channel, message, send, env, layout, scrubber)
                    at = now_iso(clock)
                    done = ChannelDelivery(
                        at=at,
                        key=key,
                        obligation_id=o.id,
                        delivery=number,
                        reminder=reminder,
                        person=person.name,
                        channel=channel.label,
                        type=channel.type,
                        target=scrubber(target_of(channel)),
                        outcome="sent" if record is None else "failed",
                        error=record,
                        code=code is not None,
                        link=link is not None,
                    )
                    out.append([dumps_line(done.to_json())])
                    journal.commit(key, f"sent {at}" if record is None else f"failed {at}")
                    (result.sent if record is None else result.failed).append(done)
    return result


def _send_one(
    channel: Channel,
    message: Message,
    send: Sender,
    env: Env,
    layout: Layout,
    scrubber: Scrubber,
) -> str | None:
    """Send; None when it went, else why not (scrubbed of every secret it could hold)."""
    used: list[str] = []
    try:
        url: str | None = None
        if channel.url is not None:
            url, used = resolve(channel.url, channel, env, layout.root)
        if channel.command is not None:
            command: list[str] = []
            for arg in channel.command:
                resolved, values = resolve(arg, channel, env, layout.root)
                command.append(resolved)
                used += values
            # The resolved command holds secrets that the channel's own check refuses in a
            # file: a copy of it, unchecked, is what is sent and never written.
            channel = copy.copy(channel)
            msgspec.structs.force_setattr(cast(Any, channel), "command", command)
        send(channel, url, message)
    except SendFailed as exc:
        reason = str(exc)
    except Exception as exc:  # a library's own failure is a failed send, not a crash
        reason = f"{type(exc).__name__}: {exc}"
    else:
        return None
    # An error text is short and only ours to record: every value this send used goes.
    reason = Scrubber(used, min_chars=3)(scrubber(reason))
    return visible(reason.replace("\n", " "))[:500]


def _reconcile(
    journal: EffectJournal,
    layout: Layout,
    out: Any,
    policy: InteractionPolicy,
    clock: Clock,
) -> list[ChannelDelivery]:
    """Settle channel keys left ``intended``: by their record when one was written, else as
    unknown — presumed sent, never sent again."""
    records = {r.key: r for r in read_deliveries(layout)[0]}
    settled: list[ChannelDelivery] = []

    def verify(state: EffectState) -> tuple[bool, str]:
        found = records.get(state.key)
        if found is not None:
            return True, f"{found.outcome} {found.at} (recorded before the interruption)"
        parsed = _parse_key(state.key)
        at = now_iso(clock)
        if parsed is not None:
            obligation_id, number, person_name, channel_name = parsed
            channel = _find_channel(policy, person_name, channel_name)
            record = ChannelDelivery(
                at=at,
                key=state.key,
                obligation_id=obligation_id,
                delivery=number,
                reminder=number > 0,
                person=person_name,
                channel=channel_name,
                type=channel.type if channel is not None else "?",
                target=target_of(channel) if channel is not None else "?",
                outcome="unknown",
                error="interrupted between sending and recording; not sent again",
            )
            out.append([dumps_line(record.to_json())])
            settled.append(record)
        return True, f"unknown {at}: interrupted between sending and recording; not sent again"

    journal.reconcile(verify, where=_is_channel_key)
    return settled


def _find_channel(policy: InteractionPolicy, person: str, name: str) -> Channel | None:
    found = policy.person(person)
    for channel in (found.channels or []) if found is not None else []:
        if channel.label == name:
            return channel
    return None


__all__ = [
    "DELIVERIES_FILE",
    "TOOL",
    "ChannelDelivery",
    "FanOut",
    "Message",
    "SendFailed",
    "Sender",
    "channel_key",
    "channel_secrets",
    "compose",
    "default_sender",
    "fan_out",
    "has_channels",
    "in_quiet_hours",
    "instance_channel_secrets",
    "owners",
    "read_deliveries",
    "system_clock",
    "wants",
]
