"""Which obligations the inbox shows, in order, kept up to date change by change (no Textual).

The inbox's rows are the obligations a preset and a filter keep, ordered by severity, then what
vetoes, then age. Rebuilding that from every obligation on every change or keystroke is what
made a large inbox slow, so this keeps the ordered rows and:

* applies a fold's changes by moving only the obligations it touched;
* narrows the rows already kept when more free text is typed onto the filter, and scans
  everything only when the query could keep something new;
* keeps each obligation's searchable text between keystrokes.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Iterable

from regulator.protocol.obligations import ObligationState
from regulator.protocol.vocab import SEVERITY_ORDER, TERMINAL_STATUSES

from .filtering import Context, compile_filter, haystack, narrows, needs_kind
from .keys import RowKey
from .model import InstanceModel, sort_key

PRESETS = ("owed to me", "all open", "everything")

SortKey = tuple[int, int, str, int, str]


class InboxIndex:
    def __init__(self, models: list[InstanceModel], is_new: Callable[[RowKey], bool]) -> None:
        self.models = models
        self.is_new = is_new
        self.person: str | None = None
        self.preset = 0
        self.query = ""
        self._rows: list[tuple[SortKey, RowKey]] = []
        self._sort: dict[RowKey, SortKey] = {}
        self._keys: list[RowKey] | None = None
        self._text: dict[RowKey, str] = {}
        self._keep = compile_filter("")
        # A rebuild found an instance mid-fold and left it out: the next change rebuilds.
        self.stale = False
        self._built = False  # narrowing needs rows to narrow

    # -- what is shown ---------------------------------------------------------------------

    @property
    def keys(self) -> list[RowKey]:
        if self._keys is None:
            self._keys = [key for _, key in self._rows]
        return self._keys

    def __contains__(self, key: RowKey) -> bool:
        return key in self._sort

    def __len__(self) -> int:
        return len(self._rows)

    def vetoes(self) -> int:
        """How many of the rows shown block (the sort key says so: no look-ups)."""
        return sum(1 for sk, _ in self._rows if sk[1] == 0)

    def obligation(self, key: RowKey) -> ObligationState:
        return self.models[key.instance].log.obligations[key.oid]

    # -- deciding one row ------------------------------------------------------------------------

    def _owed_to_me(self, model: InstanceModel, o: ObligationState) -> bool:
        """Owed to a person, and within what the acting person may disposition."""
        if o.consumer != "human":
            return False
        policy = model.interaction_policy()
        person = policy.person(self.person) if policy and self.person else None
        if person is None:
            return True  # nobody named: every person's share is shown
        return SEVERITY_ORDER[person.resolve_up_to] >= SEVERITY_ORDER[o.severity]

    def _in_preset(self, model: InstanceModel, o: ObligationState) -> bool:
        preset = PRESETS[self.preset]
        if preset != "everything" and o.status in TERMINAL_STATUSES:
            return False
        return not (preset == "owed to me" and not self._owed_to_me(model, o))

    def _matches(self, key: RowKey, o: ObligationState, *, kind: bool) -> bool:
        if not self.query:
            return True
        model = self.models[key.instance]
        text = self._text.get(key)
        if text is None:
            text = self._text[key] = haystack(o, model.name)
        interaction = model.interaction(o.id) if kind and o.concern == "interaction" else None
        context = Context(
            model.name,
            interaction.request.kind if interaction else None,
            self.is_new(key),
            text,
        )
        return self._keep(o, context)

    @staticmethod
    def _sort_key(key: RowKey, o: ObligationState) -> SortKey:
        return (*sort_key(o), key.instance, key.oid)

    # -- building and changing -----------------------------------------------------------------

    def rebuild(self) -> None:
        """Every obligation of every loaded instance, decided again."""
        kind = needs_kind(self.query)
        rows: list[tuple[SortKey, RowKey]] = []
        self.stale = False
        for index, model in enumerate(self.models):
            if not model.loaded:
                continue
            # Never wait long on a fold running on a worker: its end brings a rebuild.
            if not model.lock.acquire(timeout=0.05):
                self.stale = True
                continue
            try:
                source = (
                    list(model.open.values())
                    if PRESETS[self.preset] != "everything"
                    else list(model.log.obligations.values())
                )
            finally:
                model.lock.release()
            for o in source:
                if not self._in_preset(model, o):
                    continue
                key = RowKey(index, o.id)
                if self.query and not self._matches(key, o, kind=kind):
                    continue
                rows.append((self._sort_key(key, o), key))
        rows.sort()
        self._set(rows)
        self._built = True

    def _set(self, rows: list[tuple[SortKey, RowKey]]) -> None:
        self._rows = rows
        self._sort = {key: sk for sk, key in rows}
        self._keys = None

    def update(self, index: int, oids: Iterable[str]) -> set[RowKey]:
        """An instance's obligations ``oids`` changed: move just those; returns the keys."""
        model = self.models[index]
        kind = needs_kind(self.query)
        changed: set[RowKey] = set()
        for oid in oids:
            key = RowKey(index, oid)
            changed.add(key)
            self._text.pop(key, None)
            old = self._sort.pop(key, None)
            if old is not None:
                at = bisect_left(self._rows, (old, key))
                if at < len(self._rows) and self._rows[at][1] == key:
                    del self._rows[at]
            o = model.log.obligations.get(oid)
            if o is None or not self._in_preset(model, o):
                continue
            if self.query and not self._matches(key, o, kind=kind):
                continue
            sk = self._sort_key(key, o)
            insort(self._rows, (sk, key))
            self._sort[key] = sk
        if changed:
            self._keys = None
        return changed

    def set_query(self, query: str) -> None:
        """A new filter: narrows what is shown when it can, else decides every row again."""
        old, self.query = self.query, query
        self._keep = compile_filter(query)
        if query == old and self._built:
            return
        if self._built and narrows(old, query):
            self._set([(sk, key) for sk, key in self._rows if self._narrow_keeps(key)])
        else:
            self.rebuild()

    def _narrow_keeps(self, key: RowKey) -> bool:
        o = self.models[key.instance].log.obligations.get(key.oid)
        return o is not None and self._matches(key, o, kind=False)

    def forget_text(self) -> None:
        self._text.clear()


__all__ = ["PRESETS", "InboxIndex"]
