"""Python's cycle collector paused for one piece of work that builds many long-lived objects.

A record document of a few MiB, or a lint run over an engine (syntax trees, abstract values), is
hundreds of thousands to millions of containers that live until the work ends; every collection
on the way walks all of them again (it doubled a document's read and was two thirds of a lint
run's parsing). What the work drops is freed by reference counting; the few cycles it leaves wait
for the next collection after it. The collector is back as the caller had it afterwards: a host
that turned it off keeps it off.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused"]


@contextmanager
def paused() -> Iterator[None]:
    """The collector off inside (a ``with`` block, or a decorator), as it was after."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            # What the work built is all in the youngest generation, so the first allocation
            # after enabling would scan every object of it (seconds for a lint run). It is moved
            # to the oldest generation instead, where objects that lived that long would be:
            # the next full collection, whenever the host's allocations call for it, sees it.
            # A host that froze its own heap (a server after start-up) keeps it frozen: the
            # move is made only where nothing is frozen, as unfreeze thaws everything.
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()
