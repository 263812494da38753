"""The cycle collector paused while a large structure with no reference cycles is built.

Folding a log, building ``status``'s view and placing an inspector's rows each make hundreds of
thousands of small objects. With the collector on, each of its collections walks everything
made so far again, and the build grows quadratic; off, nothing is lost, since reference
counting still frees what has no cycles.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused(*, freeze: bool | Callable[[], bool] = False) -> Iterator[None]:
    """The collector off for the body, on again after.

    ``freeze`` (or what it returns, asked at the end) moves everything alive by then out of
    the collector's sight for good (``gc.freeze``): right for a process's long-lived fold, wrong
    for anything that holds reference cycles and may be dropped (a screen). When the collector
    was already off, whoever turned it off turns it on: nothing is done here.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if freeze is True or (callable(freeze) and freeze()):
            gc.freeze()
        gc.enable()
