"""Built-in records (``catalog/*.toml``) and runnable adapters for real attention kernels.

Installed as ``attn_contracts.backends``. Importing this package imports nothing heavy: each adapter
module imports torch or FlashInfer inside its functions, so a missing optional library is a clean
"skipped" in ``attn-contracts verify``, never an ImportError at import.
"""
