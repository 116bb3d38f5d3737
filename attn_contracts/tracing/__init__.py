"""A trace of the real LSE producer and consumer calls (``attn_contracts.trace()``).

The linter reads the code and the startup gate reads declarations; the trace watches what runs.
Inside ``with attn_contracts.trace():`` every function the records' ``calls`` name is wrapped,
each LSE a producer returns is tagged with its base and layout, the tag follows the tensor through
views, copies and the known conversions (a ``TorchFunctionMode``), and each consumer call compares
what it is told with the tag it is given: a mismatch is an ``AC016``/``AC017`` error naming both
call sites and the producer's record. Outside a trace nothing is wrapped and no mode is pushed.

- :mod:`~attn_contracts.tracing.tags`: what a tag holds, and how ops move its axes (torch-free);
- :mod:`~attn_contracts.tracing.targets`: which functions, and the patches (torch-free);
- :mod:`~attn_contracts.tracing.mode`: the mode that follows tags;
- :mod:`~attn_contracts.tracing.session`: :class:`Trace`, :class:`TraceReport`, :func:`trace`.

torch is imported when a trace starts, never when this package is imported.
"""

from attn_contracts.tracing.session import Mismatch
from attn_contracts.tracing.session import Trace
from attn_contracts.tracing.session import TraceReport
from attn_contracts.tracing.session import trace

__all__ = ["Mismatch", "Trace", "TraceReport", "trace"]
