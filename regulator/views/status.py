"""``regulator status``: the first read model of an instance.

A view of what the files hold — units with their records, obligations, interactions, unrouted
messages, leases — and every problem the readers met, as JSON in the on-disk camelCase shapes
or as text. It reads and never writes.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import msgspec
import orjson

from regulator.protocol.base import Record
from regulator.protocol.clock import now_iso
from regulator.protocol.credentials import is_secret_name
from regulator.protocol.execution import (
    AttemptRecord,
    BudgetLedger,
    Lease,
    RecoveryDecision,
    UnitRecord,
    WorkContract,
)
from regulator.protocol.interaction import InteractionRequest
from regulator.protocol.manifest import InstanceManifest
from regulator.protocol.obligations import ObligationState
from regulator.protocol.text import inert_json_bytes, visible
from regulator.rules.regulatory_log import InteractionState, RegulatoryLog, answer_json
from regulator.store import Layout, StoreError, list_dir
from regulator.store.collector import collector_paused
from regulator.store.logs import LogSpec, model_parser, read_log, read_record
from regulator.views.describe import describe_obligation
from regulator.views.redaction import MIN_CANARY_CHARS, REDACTED, Redactor

if TYPE_CHECKING:
    from regulator.host.channels import ChannelDelivery

    # Imported where a status is built: `obligations --json` redacts its list with this
    # module's writer and does not load the policies (nor their loader and YAML).
    from regulator.policy import Definition


def _unit_view(
    layout: Layout, unit_id: str, obligation_ids: list[str], problems: list[str]
) -> dict[str, Any]:
    unit, problem = read_record(
        layout, layout.unit_record(unit_id), UnitRecord, refuse_unreadable=True
    )
    if problem is not None:
        problems.append(problem)
    view: dict[str, Any] = {"unit": unit.to_json_dict() if unit else {"unitId": unit_id}}
    if unit is not None:
        contract, problem = read_record(
            layout,
            layout.contract(unit_id, unit.contract.version),
            WorkContract,
            refuse_unreadable=True,
        )
        if contract is not None:
            view["contract"] = contract.to_json_dict()
        elif problem is not None:
            problems.append(problem)
    for key, path, model in (
        ("attemptRecords", layout.attempts(unit_id), AttemptRecord),
        ("decisions", layout.decisions(unit_id), RecoveryDecision),
    ):
        items, found = read_log(layout, LogSpec(path, model_parser(model)))
        view[key] = [item.to_json_dict() for item in items]
        problems += [str(p) for p in found]
    budgets = layout.list_budgets(unit_id)
    if budgets:
        ledger, problem = read_record(
            layout, layout.budget(unit_id, budgets[-1]), BudgetLedger, refuse_unreadable=True
        )
        if ledger is not None:
            view["budget"] = ledger.to_json_dict()
        elif problem is not None:
            problems.append(problem)
    # The ids only: the obligations themselves are listed once, under the instance, so that the
    # view grows with units + obligations, not units × obligations.
    view["obligationIds"] = obligation_ids
    return view


@dataclass(frozen=True)
class Status:
    """The read model: ``view`` in the on-disk camelCase shapes, and the folded obligations
    it was built from, so the text view need not parse the JSON view back."""

    view: dict[str, Any]
    obligations: list[ObligationState]
    #: The view's ``instance.obligations`` and ``instance.interactions`` left empty, for
    #: ``write_status_json`` to fill.
    lazy: bool = False
    interactions: list[InteractionState] = field(default_factory=list)
    #: Entries under ``.regulator/`` the store refuses and no reader here opened: the view
    #: names them among its problems, and ``status`` refuses after showing it.
    misplaced: list[str] = field(default_factory=list)
    #: Ours: the questions a session is still waiting on, and where each went
    #: (``asked alice on phone, 0:42 ago``), one line each.
    waiting: list[str] = field(default_factory=list)


def build_status(root: Path, definition: Definition, *, obligations: bool = True) -> Status:
    """The read model of the instance at ``root``. Without ``obligations`` the view leaves out
    the obligations' and interactions' JSON (``Status.obligations`` and ``.interactions`` still
    hold them): the text view does not need it, and ``write_status_json`` makes it in batches."""
    from regulator.policy import POLICY_KINDS, PolicyError

    layout = Layout(root)
    policy_problems: list[str] = []
    policies: dict[str, Any] = {}
    for kind in POLICY_KINDS:
        try:
            policy: Any = getattr(definition, kind)
            policies[kind] = {
                "name": policy.name,
                "version": policy.version,
                "file": str(definition.source(kind)),
            }
        except PolicyError as exc:
            # A definition refused as a whole (policies/ a FIFO) is refused once, not per kind.
            policy_problems += [p for p in exc.problems if p not in policy_problems]
    log = RegulatoryLog(layout)
    log.refresh()
    # Symlinks, FIFOs, misplaced directories: listings skip them, so name them here.
    misplaced = layout.misplaced()
    with collector_paused(freeze=True):
        view = _view(
            root, definition, layout, log, policies, policy_problems, misplaced, obligations
        )
    return Status(
        view,
        list(log.obligations.values()),
        lazy=not obligations,
        interactions=list(log.interactions.values()),
        misplaced=misplaced,
        waiting=waiting_lines(layout, log),
    )


def waiting_lines(layout: Layout, log: RegulatoryLog, now: datetime | None = None) -> list[str]:
    """A line per question whose asking call still waits (asked in the room, or of a person
    reached through ``serve --http``): what it is, where it went, how long it has left."""
    from datetime import timedelta

    from regulator.protocol.clock import parse_iso, system_clock
    from regulator.protocol.vocab import TERMINAL_STATUSES

    now = now if now is not None else system_clock()
    sent: dict[str, list[ChannelDelivery]] | None = None
    lines: list[str] = []
    for i in log.interactions.values():
        r = i.request
        if i.answers or r.channel not in ("tui", "outbox") or r.timeout_ms <= 0:
            continue
        o = log.obligations.get(r.obligation_id)
        if o is None or o.status in TERMINAL_STATUSES:
            continue
        try:
            left = parse_iso(r.raised_at) + timedelta(milliseconds=r.timeout_ms) - now
        except ValueError:
            continue
        if left.total_seconds() <= 0:
            continue
        # The channels' machinery loads for a question that still waits, not for every view.
        from regulator.host.channels import read_deliveries
        from regulator.host.reach import where_asked

        if sent is None:
            sent = {}
            for d in read_deliveries(layout)[0]:
                sent.setdefault(d.obligation_id, []).append(d)
        where = where_asked(sent.get(o.id, []), now) or (
            "asked in the room" if r.channel == "tui" else "not sent yet"
        )
        secs = int(left.total_seconds())
        lines.append(
            f"  waiting {v(o.id[:8])} {v(r.kind)}: {v(r.subject)} — {v(where)}; "
            f"{secs // 60}:{secs % 60:02d} left"
        )
    return lines


def _view(
    root: Path,
    definition: Definition,
    layout: Layout,
    log: RegulatoryLog,
    policies: dict[str, Any],
    policy_problems: list[str],
    misplaced: list[str],
    obligations: bool,
) -> dict[str, Any]:
    problems: list[str] = []
    instance: dict[str, Any] = {"dir": str(root)}
    # A file read here that cannot be read at all (a FIFO, a symlink) refuses the whole view.
    manifest, problem = read_record(
        layout, layout.manifest, InstanceManifest, refuse_unreadable=True
    )
    if manifest is not None:
        instance["manifest"] = manifest.to_json_dict()
    else:
        instance["manifestProblem"] = problem
    problems += misplaced
    by_unit: dict[str, list[str]] = {}
    for o in log.obligations.values():
        if o.unit is not None:
            by_unit.setdefault(o.unit, []).append(o.id)
    instance["units"] = [
        _unit_view(layout, u, by_unit.get(u, []), problems) for u in layout.list_units()
    ]
    leases = []
    try:  # list_dir, not glob: a symlinked leases/ is refused, not followed
        names = list_dir(layout.leases_dir, kind="file")
    except StoreError:
        names = []  # named by misplaced() above
    for name in names:
        if name.endswith(".json"):
            path = layout.leases_dir / name
            lease, problem = read_record(layout, path, Lease, refuse_unreadable=True)
            if lease is not None:
                leases.append({"lease": lease.to_json_dict()})
            elif problem is not None:
                problems.append(problem)
    instance["leases"] = leases
    instance["signals"] = [m.to_json_dict() for m in log.unrouted()]
    # Without ``obligations``, empty lists hold the keys' places for ``write_status_json``.
    instance["obligations"] = (
        [o.to_json_dict() for o in log.obligations.values()] if obligations else []
    )
    instance["interactions"] = (
        [i.to_json() for i in log.interactions.values()] if obligations else []
    )
    instance["problems"] = policy_problems + [str(p) for p in log.problems] + problems
    return {
        "generatedAt": now_iso(),
        "definition": {
            "dir": str(definition.policies_dir.parent),
            "policies": policies,
            "problems": policy_problems,
        },
        "instance": instance,
    }


def render_status_text(status: Status) -> str:
    """The text view. Every value taken from a record or a file is made visible on its own."""
    view = status.view
    inst = view["instance"]
    out: list[str] = []
    manifest = inst.get("manifest")
    if manifest:
        out.append(
            f"instance {v(inst['dir'])} · initialized {v(manifest['initializedAt'][:10])} by "
            f"{v(manifest['initializedBy'])}"
        )
    else:
        out.append(f"instance {v(inst['dir'])} · {v(inst.get('manifestProblem'))}")
    policies = view["definition"]["policies"]
    out.append(
        "policies: "
        + ", ".join(f"{v(k)} {v(p['name'])} v{v(p['version'])}" for k, p in policies.items())
    )
    states = status.obligations
    open_ = [o for o in states if o.status in ("open", "acknowledged")]
    owed_by_unit: dict[str | None, set[str]] = {}
    for o in open_:
        owed_by_unit.setdefault(o.unit, set()).add(o.consumer + ("!" if o.blocks else ""))
    out.append(f"units: {len(inst['units'])}")
    for unit_view in inst["units"]:
        unit = unit_view["unit"]
        attempts = unit_view.get("attemptRecords", [])
        last = f" ({v(attempts[-1]['outcome'])})" if attempts else ""
        owed = sorted(owed_by_unit.get(unit.get("unitId"), ()))
        line = (
            f"  {v(unit.get('status', '?')):<10} {v(unit.get('unitId'))}  "
            f"{v(unit.get('unitType', ''))}  attempts {v(unit.get('attempts', 0))}{last}"
        )
        if owed:
            line += "  owed " + v(",".join(owed))
        if unit.get("reason"):
            line += f"  — {v(unit['reason'])}"
        out.append(line)
    for lease in inst["leases"]:
        held = lease["lease"]
        out.append(f"  lease {v(held['unitId'])} held by {v(held['owner'])} on {v(held['branch'])}")
    out.append(f"obligations: {len(open_)} open of {len(states)}")
    out += [f"  {describe_obligation(o)}".replace("\n", "\n  ") for o in open_]
    interactions = status.interactions
    unanswered = sum(1 for i in interactions if not i.answered)
    out.append(f"interactions: {len(interactions)} asked, {unanswered} unanswered")
    out += status.waiting
    out.append(f"unrouted messages: {len(inst['signals'])}")
    for m in inst["signals"]:
        level = m.get("severity", m.get("impact", ""))
        out.append(f"  {v(m['kind'])}  {v(level)}  {v(m['subject'])}")
    out.append(f"problems: {len(inst['problems'])}")
    out += [f"  {v(p)}" for p in inst["problems"]]
    return "\n".join(out) + "\n"


class _Scrubber:
    """Redacts JSON values in place, exactly as ``Redactor.redact_json`` copies them.

    A status view is built fresh for each call and holds many equal strings (timestamps shared
    by a transaction's events, people, channels, subjects), so each distinct string is scrubbed
    once; a string shorter than a canary can be neither one nor a credential and is only capped,
    which its length already rules out.
    """

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.scrubbed: dict[str, str] = {}
        self.names: dict[Any, tuple[Any, bool]] = {}
        #: Per record type: whether its keys and words are left alone (``_static_untouched``).
        self.static: dict[type[Any], bool] = {}

    def text(self, value: str) -> str:
        if len(value) < MIN_CANARY_CHARS:
            return value
        done = self.scrubbed.get(value)
        if done is None:
            done = self.scrubbed[value] = self.redactor.scrub(value)[0]
        return done

    def walk(self, value: Any) -> Any:
        # Strings are handled inline in the loops below (most are short or seen before): a
        # call per string would cost more than the scrubbing saved.
        kind = type(value)
        if kind is str:
            return self.text(value)
        if kind is dict:
            names, scrubbed, scrub = self.names, self.scrubbed, self.redactor.scrub
            rebuilt = False
            for key, item in value.items():
                name = names.get(key)
                if name is None:
                    secret = type(key) is str and is_secret_name(key)
                    name = names[key] = (self.text(key) if type(key) is str else key, secret)
                    if name[0] != key:
                        rebuilt = True
                elif name[0] is not key and name[0] != key:
                    rebuilt = True
                if type(item) is str:
                    if name[1] and item:
                        value[key] = REDACTED  # {"token": "…"}: the name says what it is
                    elif len(item) >= MIN_CANARY_CHARS:
                        done = scrubbed.get(item)
                        if done is None:
                            done = scrubbed[item] = scrub(item)[0]
                        if done is not item:
                            value[key] = done
                elif type(item) in _SCALARS:
                    continue
                elif name[1] and isinstance(item, str) and item:
                    value[key] = REDACTED
                else:
                    new = self.walk(item)
                    if new is not item:
                        value[key] = new
            if rebuilt:  # a key itself redacted: rare, so rebuild the dict only then
                fresh = {names[k][0]: item for k, item in value.items()}
                value.clear()
                value.update(fresh)
            return value
        if kind is list:
            scrubbed, scrub = self.scrubbed, self.redactor.scrub
            for index, item in enumerate(value):
                if type(item) is str:
                    if len(item) >= MIN_CANARY_CHARS:
                        done = scrubbed.get(item)
                        if done is None:
                            done = scrubbed[item] = scrub(item)[0]
                        if done is not item:
                            value[index] = done
                elif type(item) not in _SCALARS:
                    new = self.walk(item)
                    if new is not item:
                        value[index] = new
            return value
        if kind is tuple:
            return [self.walk(item) for item in value]
        if isinstance(value, str | dict | list | tuple):  # a subclass: the general path
            return self.redactor.redact_json(value)
        return value


_SCALARS = frozenset({bool, int, float, type(None)})


def redacted_view(view: dict[str, Any], redactor: Redactor) -> dict[str, Any]:
    """``view`` with every string (keys too) redacted as ``Redactor.redact_json`` does, in place."""
    with collector_paused(freeze=True):
        return cast("dict[str, Any]", _Scrubber(redactor).walk(view))


def write_status_json(
    status: Status,
    redactor: Redactor,
    write: Callable[[bytes | memoryview], object],
    *,
    batch: int = 1000,
) -> None:
    """The view as JSON (indented by two), redacted and inert, written in pieces (``bytes``,
    or a ``memoryview`` of a batch's bytes): the view's own fields by orjson, the lists of
    records by msgspec (``_write_records``).

    The same bytes as encoding the whole redacted view at once; but when the view was built
    without its obligations (``build_status(..., obligations=False)``) the obligations and the
    interactions are turned into JSON in batches (:func:`_write_records`), so that memory holds
    the fold and one batch's JSON, not every obligation's dict and the whole text (hundreds of
    MB at 1,000,000 lines). ``batch``: the records turned into JSON at a time.
    """
    scrubber = _Scrubber(redactor)
    view = status.view
    instance = view["instance"]
    with collector_paused(freeze=True):
        if not status.lazy:
            write(_inert(orjson.dumps(scrubber.walk(view), option=_INDENT) + b"\n"))
            return
        # Placeholders no record can hold (fresh random tokens) mark where the lists go.
        marks = {key: f"{key}-{secrets.token_hex(16)}" for key in ("obligations", "interactions")}
        scrubber.walk(view)
        instance.update(marks)
        try:
            encoded = orjson.dumps(view, option=_INDENT)
        finally:
            instance.update({key: [] for key in marks})
        lists: list[tuple[int, int, list[Any], _ToJson]] = [
            (*_span(encoded, marks["obligations"]), status.obligations, record_json),
            (*_span(encoded, marks["interactions"]), status.interactions, _interaction_json),
        ]
        at = 0
        for start, end, items, to_json in sorted(lists, key=lambda entry: entry[0]):
            write(_inert(encoded[at:start]))
            _write_records(items, to_json, scrubber, write, batch=batch)
            at = end
        write(_inert(encoded[at:]) + b"\n")


def _span(encoded: bytes, mark: str) -> tuple[int, int]:
    quoted = b'"' + mark.encode() + b'"'
    start = encoded.index(quoted)
    return start, start + len(quoted)


# What an item of a list is written as: a record (or a dict that may hold records), which
# msgspec encodes in its file's shape; its strings appended to the list.
_ToJson = Callable[[Any, list[Any]], Any]

#: In a record's strings: a value of no declared shape (a JSON value), which only a walk of
#: the record's JSON can tell about.
OPAQUE = object()


def record_json(record: Record, strings: list[Any]) -> Record:
    """``record``, to be encoded as it is, and every string it holds appended to ``strings``."""
    _strings_of(record, strings)
    return record


def _strings_of(record: Any, strings: list[Any]) -> None:
    # ``astuple`` gives the fields' values at C speed; only strings, lists and records are
    # looked into (a record's fields hold nothing else, bar a JSON value: OPAQUE).
    for value in msgspec.structs.astuple(record):
        kind = type(value)
        if kind is str:
            strings.append(value)
        elif kind is list:
            for item in value:
                if type(item) is str:
                    strings.append(item)
                elif isinstance(item, msgspec.Struct):
                    _strings_of(item, strings)
                else:
                    strings.append(OPAQUE)
        elif isinstance(value, msgspec.Struct):
            _strings_of(value, strings)
        elif value is not None and kind is not bool and kind is not int and kind is not float:
            strings.append(OPAQUE)


def _interaction_json(interaction: InteractionState, strings: list[Any]) -> dict[str, Any]:
    answers = [answer_json(a) for a in interaction.answers]
    for answer in answers:
        strings += answer.values()
        if not _ANSWER_KEYS.issuperset(answer):
            strings.append(OPAQUE)  # a key not looked at: walk the record
    return {"request": record_json(interaction.request, strings), "answers": answers}


_ANSWER_KEYS = frozenset({"at", "by", "outcome", "channel", "answer"})


def write_records_json(
    items: list[Any],
    to_json: _ToJson,
    redactor: Redactor,
    write: Callable[[bytes | memoryview], object],
) -> None:
    """``items`` as a JSON list of what ``to_json`` makes of them (indented by two, ending in a
    newline), redacted and inert: the bytes ``print_json`` would write of the redacted list
    (see ``_write_records``), made as the status view's lists are (one batch's JSON in memory
    at a time)."""
    with collector_paused(freeze=True):
        _write_records(items, to_json, _Scrubber(redactor), write, top=True, batch=1000)
    write(b"\n")


def _write_records(
    items: list[Any],
    to_json: _ToJson,
    scrubber: _Scrubber,
    write: Callable[[bytes | memoryview], object],
    *,
    batch: int,
    top: bool = False,
) -> None:
    """``items`` as the JSON list at depth 2 of the view (or as the whole document, ``top``),
    redacted as ``scrubber.walk`` would.

    ``record_json`` lists the strings of a batch's records; the redactor looks at the batch's
    distinct strings all at once (``Redactor.suspects``), and only a record holding a string it
    changes, or strings that could not be listed, is made a dict and walked. Every key and
    ``Literal`` word of a record type is looked at once per type.

    The records are encoded by msgspec, straight from the structs, and indented by its
    ``format``: the bytes orjson writes of their dicts (``print_json``), but for the spelling
    of a float's exponent (``1e16`` for ``1e+16``), half the time.
    """
    if not items:
        write(b"[]")
        return
    redactor = scrubber.redactor
    opening = b"["
    for first in range(0, len(items), batch):
        some = items[first : first + batch]
        strings: list[Any] = []
        ends: list[int] = []
        shown = []
        for item in some:
            shown.append(to_json(item, strings))
            ends.append(len(strings))
        walk = _records_to_walk(some, strings, ends, redactor, scrubber)
        for index in walk:
            shown[index] = scrubber.walk(msgspec.to_builtins(shown[index]))
        # The batch inside the same nesting as in the view, so that it is indented the same.
        encoded = msgspec.json.format(_encode(shown if top else {"i": {"o": shown}}), indent=2)
        head, tail = (b"[", b"\n]") if top else (_NEST_HEAD, _NEST_TAIL)
        assert encoded.startswith(head) and encoded.endswith(tail)
        body = memoryview(encoded)[len(head) : -len(tail)]
        write(opening)
        # Plain ASCII (almost always): the batch's bytes as they are, not copied (at 1,000,000
        # lines copying them costs a quarter of a second).
        write(body if _plain(encoded) else inert_json_bytes(bytes(body)))
        opening = b","
    write(b"\n]" if top else b"\n    ]")


def _records_to_walk(
    batch: list[Any], strings: list[Any], ends: list[int], redactor: Redactor, scrubber: _Scrubber
) -> list[int]:
    """The indexes of the records of ``batch`` the redactor could change."""
    if not all(_static_untouched(type(item), scrubber) for item in batch):
        return list(range(len(batch)))
    fresh = set(strings)
    fresh.discard(None)
    opaque = OPAQUE in fresh
    fresh.discard(OPAQUE)
    texts = list(fresh)
    if not all(type(t) is str for t in texts):
        return list(range(len(batch)))  # a field holding what its type does not say
    changed = {text for text in redactor.suspects(texts) if scrubber.text(text) != text}
    if not changed and not opaque:
        return []
    walk = []
    start = 0
    for index, end in enumerate(ends):
        mine = strings[start:end]
        if (opaque and OPAQUE in mine) or not changed.isdisjoint(mine):
            walk.append(index)
        start = end
    return walk


def _static_untouched(kind: type[Any], scrubber: _Scrubber) -> bool:
    """Whether no key or word a record of ``kind`` can hold is changed by the redactor (nor,
    being a secret's name, redacts its value): then only its listed strings need a look."""
    found = scrubber.static.get(kind)
    if found is None:
        if kind is InteractionState:
            words: set[str] | None = (
                (_words(InteractionRequest) or set()) | {"request", "answers"} | _ANSWER_KEYS
            )
        else:
            words = _words(kind)
        found = scrubber.static[kind] = words is not None and all(
            scrubber.text(w) == w and not is_secret_name(w) for w in words
        )
    return found


def _words(kind: type[Any]) -> set[str] | None:
    """Every key and every closed-vocabulary word a record of ``kind`` can hold (its nested
    records' too); ``None`` if it is no record."""
    from msgspec import inspect

    if not (isinstance(kind, type) and issubclass(kind, msgspec.Struct)):
        return None
    words: set[str] = set()
    seen: set[type[Any]] = set()
    pending: list[Any] = [inspect.type_info(kind)]
    while pending:
        node = pending.pop()
        if isinstance(node, inspect.StructType):
            if node.cls in seen:
                continue
            seen.add(node.cls)
            if node.tag_field is not None:
                words |= {node.tag_field, str(node.tag)}
            for field_info in node.fields:
                words.add(field_info.encode_name)
                pending.append(field_info.type)
        elif isinstance(node, inspect.LiteralType):
            words |= {str(v) for v in node.values}
        elif isinstance(node, inspect.UnionType):
            pending.extend(node.types)
        elif isinstance(node, inspect.ListType):
            pending.append(node.item_type)
    return words


_INDENT = orjson.OPT_INDENT_2
_encode = msgspec.json.Encoder().encode
_NEST_HEAD = b'{\n  "i": {\n    "o": ['
_NEST_TAIL = b"\n    ]\n  }\n}"


def _inert(encoded: bytes) -> bytes:
    return encoded if _plain(encoded) else inert_json_bytes(encoded)


def _plain(encoded: bytes) -> bool:
    # orjson escapes the C0 controls; DEL and anything beyond ASCII are the escape step's.
    return encoded.isascii() and b"\x7f" not in encoded


def v(value: Any) -> str:
    """A value from the read model, as text no terminal acts on."""
    return visible(str(value))
