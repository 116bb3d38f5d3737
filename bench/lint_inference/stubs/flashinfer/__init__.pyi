# Our own stand-in for the two FlashInfer entry points the cases name, so that a whole-program Pysa
# run resolves them without analysing FlashInfer's 106 MB of sources (the signatures follow
# flashinfer-python 0.7.2.post1: decode.py:2711 and mla/_core.py:4859; no code is copied).
from typing import Any

from flashinfer.decode import BatchDecodeWithPagedKVCacheWrapper as BatchDecodeWithPagedKVCacheWrapper

def __getattr__(name: str) -> Any: ...  # an incomplete stub: every other name is Any
