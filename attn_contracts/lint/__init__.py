"""``attn-contracts lint``: static checks for backend authors and engine code (no torch, no
execution: sources are read with ``ast``, records with ``tomllib``). The rules, formats and exit
codes are described in :mod:`attn_contracts.lint.cli` (the ``--help`` text).

This package face re-exports the public names; the code lives by concept:

- :mod:`.driver`: the run: file discovery, reading and parsing, the per-file pass and its worker
  pool, the knowledge of each tree's releases, and the program model (:func:`lint_paths`,
  :func:`lint_model`);
- :mod:`.report`: the findings as text, JSON, GitHub annotations or SARIF, and statistics;
- :mod:`.cli`: the arguments, the exit codes and ``main``;
- :mod:`.classes`, :mod:`.model`, :mod:`.edges`, :mod:`.rules`: what is inferred from the
  sources and the rules that judge it;
- the interpreter, which infers and never reports (:mod:`.inferred` holds the facts the rules
  read), bottom up: :mod:`.values` (the lattice), :mod:`.torch_model` (what tensor ops do to an
  LSE), :mod:`.containers`, :mod:`.calls` (arguments, parameters, summaries), :mod:`.analysis`
  (a run's state), :mod:`.modules` and :mod:`.attributes` (name, class and attribute resolution),
  :mod:`.partition` (which paths are kept apart, the conditions a path decided), :mod:`.scope`
  (statements and expressions), :mod:`.record_calls` (producers and consumers),
  :mod:`.frame` (calls) and :mod:`.interpret` (the analysis of functions, the entry points).
"""

from __future__ import annotations

from attn_contracts.lint.cli import add_arguments
from attn_contracts.lint.cli import exit_code
from attn_contracts.lint.cli import main
from attn_contracts.lint.cli import run
from attn_contracts.lint.config import LintConfig
from attn_contracts.lint.driver import EngineRule
from attn_contracts.lint.driver import knowledge_for
from attn_contracts.lint.driver import lint_model
from attn_contracts.lint.driver import lint_paths
from attn_contracts.lint.driver import worker_count
from attn_contracts.lint.model import ProgramModel
from attn_contracts.lint.record_index import Knowledge
from attn_contracts.lint.report import sarif
from attn_contracts.lint.report import statistics
from attn_contracts.sources import MAX_FILE_BYTES

__all__ = [
    "MAX_FILE_BYTES",
    "EngineRule",
    "Knowledge",
    "LintConfig",
    "ProgramModel",
    "add_arguments",
    "exit_code",
    "knowledge_for",
    "lint_model",
    "lint_paths",
    "main",
    "run",
    "sarif",
    "statistics",
    "worker_count",
]
