"""Which obligations the inbox shows, in order, kept up to date change by change (no Textual).

The inbox's rows are the obligations a preset and a filter keep, ordered by severity, then what
vetoes, then age. Rebuilding that from every obligation on every change or keystroke is what
made a large inbox slow, so this keeps the preset's ordered rows (the base) and what the filter
keeps of them, and:

* applies a fold's changes by moving only the obligations it touched;
* filters the base again on a new query, and only the rows already kept when more free text is
  typed onto it; free text (the usual case) is one substring test per row, on each
  obligation's searchable text, made once and kept between keystrokes (``warm`` makes them
  ahead, a slice at a time, when the filter opens). The texts of the rows shown and of the
  base are also kept as lists in the rows' order, so that a keystroke tests them in one pass
  with no look-up per row (the look-ups were most of a keystroke's filtering);
* keeps each row as its sort key, a tuple of plain values ``(severity, veto, opened, instance,
  id)``: sorted and bisected as is, and left out of the cycle collector's walks (a
  ``RowKey`` per row kept tens of thousands of objects in the collector's oldest generation,
  and its full collections paused the screen). ``KeyView`` gives the table ``RowKey`` s for
  the rows it draws.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import compress
from typing import overload

from regulator.protocol.obligations import ObligationState
from regulator.protocol.vocab import SEVERITY_ORDER, TERMINAL_STATUSES

from .filtering import (
    Context,
    Predicate,
    compile_filter,
    haystack,
    narrows,
    needs_kind,
    needs_new,
    split_free_text,
)
from .keys import RowKey
from .model import InstanceView, sort_key

PRESETS = ("owed to me", "all open", "everything")

#: (-severity, 0 when it vetoes, opened at, instance, obligation id): a row, and its order.
SortKey = tuple[int, int, str, int, str]


class KeyView(Sequence[RowKey]):
    """The rows as ``RowKey`` s, made when asked for: a table reads only those it draws."""

    __slots__ = ("_rows",)

    def __init__(self, rows: list[SortKey]) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, at: int) -> RowKey: ...
    @overload
    def __getitem__(self, at: slice) -> list[RowKey]: ...
    def __getitem__(self, at: int | slice) -> RowKey | list[RowKey]:
        if isinstance(at, slice):
            return [RowKey(sk[3], sk[4]) for sk in self._rows[at]]
        sk = self._rows[at]
        return RowKey(sk[3], sk[4])

    def __iter__(self) -> Iterator[RowKey]:
        return (RowKey(sk[3], sk[4]) for sk in self._rows)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KeyView):
            return self._rows == other._rows
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class InboxIndex:
    def __init__(self, models: list[InstanceView], is_new: Callable[[RowKey], bool]) -> None:
        self.models = models
        self.is_new = is_new
        self.person: str | None = None
        self.preset = 0
        self.query = ""
        # The preset's rows, sorted; where each is (instance -> id -> its sort key).
        self._base: list[SortKey] = []
        self._where: dict[int, dict[str, SortKey]] = {}
        # What the filter keeps of the base, in the same order (None: no filter, the base).
        self._kept: list[SortKey] | None = None
        # The searchable texts of the rows kept and of the base, in their order (None: not
        # made yet, or the rows changed since).
        self._kept_text: list[str] | None = None
        self._base_text: list[str] | None = None
        self._warm_text: list[str] = []  # ``_base_text`` while ``warm`` makes it
        self._warm_rows: list[SortKey] | None = None  # the base ``warm`` is going through
        # Each obligation's searchable text, lowercased (instance -> id -> text).
        self._text: dict[int, dict[str, str]] = {}
        self._vetoes: int | None = None
        self._base_vetoes: int | None = None
        self._warmed = 0  # how far ``warm`` went through the base
        # A rebuild found an instance mid-fold and left it out: the next change rebuilds.
        self.stale = False
        self._built = False  # narrowing needs rows to narrow

    # -- what is shown ---------------------------------------------------------------------

    @property
    def rows(self) -> list[SortKey]:
        return self._base if self._kept is None else self._kept

    @property
    def keys(self) -> KeyView:
        """The rows shown, as keys (a view: a key is made when one is read)."""
        return KeyView(self.rows)

    def position(self, key: RowKey) -> int | None:
        """Where ``key`` is among the rows shown (None: not shown); a look-up and a bisection."""
        sk = self._where.get(key.instance, {}).get(key.oid)
        if sk is None:
            return None
        rows = self.rows
        at = bisect_left(rows, sk)
        return at if at < len(rows) and rows[at] == sk else None

    def __contains__(self, key: RowKey) -> bool:
        return self.position(key) is not None

    def __len__(self) -> int:
        return len(self.rows)

    def vetoes(self) -> int:
        """How many of the rows shown block (the sort key says so: no look-ups)."""
        if self._vetoes is None:
            self._vetoes = [sk[1] for sk in self.rows].count(0)
        return self._vetoes

    def base_count(self) -> int:
        """How many rows the preset keeps, before the filter."""
        return len(self._base)

    def base_vetoes(self) -> int:
        if self._kept is None:
            return self.vetoes()
        if self._base_vetoes is None:
            self._base_vetoes = [sk[1] for sk in self._base].count(0)
        return self._base_vetoes

    def obligation(self, key: RowKey) -> ObligationState:
        return self.models[key.instance].log.obligations[key.oid]

    # -- deciding one row ------------------------------------------------------------------------

    def _limit(self, model: InstanceView) -> int | None:
        """The highest severity the acting person may disposition here (None: any)."""
        policy = model.interaction_policy()
        person = policy.person(self.person) if policy and self.person else None
        return SEVERITY_ORDER[person.resolve_up_to] if person is not None else None

    def _in_preset(self, o: ObligationState, limit: int | None, addressee: str | None) -> bool:
        preset = PRESETS[self.preset]
        if preset != "everything" and o.status in TERMINAL_STATUSES:
            return False
        if preset == "owed to me":
            # Owed to a person, within what the acting person may disposition (nobody named:
            # every person's share), and not escalated to somebody else.
            if addressee is not None and self.person and addressee != self.person:
                return False
            return o.consumer == "human" and (limit is None or limit >= SEVERITY_ORDER[o.severity])
        return True

    def _text_of(self, sk: SortKey) -> str:
        texts = self._text.setdefault(sk[3], {})
        text = texts.get(sk[4])
        if text is None:
            model = self.models[sk[3]]
            o = model.log.obligations.get(sk[4])
            text = texts[sk[4]] = haystack(o, model.name) if o is not None else ""
        return text

    def _texts(self, rows: list[SortKey]) -> list[str]:
        """The searchable text of each of ``rows``, in order (made where missing)."""
        text_of = self._text_of
        by = [self._text.setdefault(i, {}) for i in range(len(self.models))]
        if len(by) == 1:
            texts = by[0]
            return [texts.get(sk[4]) or text_of(sk) for sk in rows]
        return [by[sk[3]].get(sk[4]) or text_of(sk) for sk in rows]

    def _filter(
        self, rows: list[SortKey], texts: list[str] | None = None
    ) -> tuple[list[SortKey], list[str]]:
        """What the query keeps of ``rows`` (in order) and their texts: its free text first,
        a substring test per row on ``texts`` (``rows``' searchable texts, made when not
        given), then its qualifiers on what is left."""
        words, rest = split_free_text(self.query)
        if texts is None:
            texts = self._texts(rows)
        for word in words:
            hits = [word in text for text in texts]
            rows, texts = list(compress(rows, hits)), list(compress(texts, hits))
        if rest:
            keep = compile_filter(rest)
            kind, new = needs_kind(rest), needs_new(rest)
            hits = [self._matches(sk, keep, kind=kind, new=new) for sk in rows]
            rows, texts = list(compress(rows, hits)), list(compress(texts, hits))
        return rows, texts

    def _matches(self, sk: SortKey, keep: Predicate, *, kind: bool, new: bool) -> bool:
        model = self.models[sk[3]]
        o = model.log.obligations.get(sk[4])
        if o is None:
            return False
        interaction = model.interaction(o.id) if kind and o.concern == "interaction" else None
        context = Context(
            model.name,
            interaction.request.kind if interaction else None,
            new and self.is_new(RowKey(sk[3], sk[4])),
            self._text_of(sk),
        )
        return keep(o, context)

    # -- building and changing -----------------------------------------------------------------

    def rebuild(self) -> None:
        """Every obligation of every loaded instance, decided again."""
        rows: list[SortKey] = []
        self.stale = False
        preset = PRESETS[self.preset]
        for index, model in enumerate(self.models):
            if not model.loaded:
                continue
            # Never wait long on a fold running on a worker: its end brings a rebuild.
            if not model.lock.acquire(timeout=0.05):
                self.stale = True
                continue
            try:
                source = list(
                    model.owed.values()
                    if preset == "owed to me"
                    else model.open.values()
                    if preset == "all open"
                    else model.log.obligations.values()
                )
            finally:
                model.lock.release()
            limit = self._limit(model)
            in_preset = self._in_preset
            addressee = model.addressee
            rows.extend(
                (*sort_key(o), index, o.id) for o in source if in_preset(o, limit, addressee(o))
            )
        rows.sort()
        self._base = rows
        where: dict[int, dict[str, SortKey]] = {}
        for sk in rows:
            where.setdefault(sk[3], {})[sk[4]] = sk
        self._where = where
        self._base_text = None
        self._kept, self._kept_text = self._filter(rows) if self.query else (None, None)
        self._vetoes = self._base_vetoes = None
        self._warmed = 0
        self._built = True

    def update(self, index: int, oids: Iterable[str]) -> set[RowKey]:
        """An instance's obligations ``oids`` changed: move just those; returns the keys."""
        model = self.models[index]
        limit = self._limit(model)
        where = self._where.setdefault(index, {})
        texts = self._text.get(index, {})
        # New lists, not changed in place: a table may still hold a view of the old ones.
        base = list(self._base)
        kept = list(self._kept) if self._kept is not None else None
        changed: set[RowKey] = set()
        for oid in oids:
            changed.add(RowKey(index, oid))
            texts.pop(oid, None)
            old = where.pop(oid, None)
            if old is not None:
                for rows in (base, kept):
                    if rows is None:
                        continue
                    at = bisect_left(rows, old)
                    if at < len(rows) and rows[at] == old:
                        del rows[at]
            o = model.log.obligations.get(oid)
            if o is None or not self._in_preset(o, limit, model.addressee(o)):
                continue
            sk: SortKey = (*sort_key(o), index, oid)
            insort(base, sk)
            where[oid] = sk
            if kept is not None and self._filter([sk])[0]:
                insort(kept, sk)
        self._base, self._kept = base, kept
        # Rows moved: their texts' lists are made again when next needed.
        self._base_text = self._kept_text = None
        self._vetoes = self._base_vetoes = None
        return changed

    def set_query(self, query: str) -> None:
        """A new filter: narrows what is shown when it can, else filters the preset's rows."""
        old, self.query = self.query, query
        if query == old and self._built:
            return
        if not self._built:
            self.rebuild()
            return
        if not query:
            self._kept = self._kept_text = None
        elif self._kept is not None and narrows(old, query):
            self._kept, self._kept_text = self._filter(self._kept, self._kept_text)
        else:
            if self._base_text is None:  # kept: the next query from the base needs them too
                self._base_text = self._texts(self._base)
            self._kept, self._kept_text = self._filter(self._base, self._base_text)
        self._vetoes = None

    def warm(self, budget: int = 4000) -> bool:
        """Make the searchable text of up to ``budget`` rows of the base, from where the last
        call stopped, and the base's list of them; True when it is made (call again until
        then)."""
        rows = self._base
        if self._base_text is not None:
            return True
        if self._warm_rows is not rows:  # another base since: from its start
            self._warm_rows, self._warm_text, self._warmed = rows, [], 0
        at = self._warmed
        end = min(len(rows), at + budget)
        self._warm_text.extend(self._texts(rows[at:end]))
        self._warmed = end
        if end < len(rows):
            return False
        self._base_text, self._warm_text, self._warm_rows = self._warm_text, [], None
        return True

    def forget_text(self) -> None:
        self._text.clear()
        self._base_text = self._kept_text = None
        self._warm_rows, self._warm_text, self._warmed = None, [], 0


__all__ = ["PRESETS", "InboxIndex", "KeyView"]
