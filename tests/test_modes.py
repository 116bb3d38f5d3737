"""attn_contracts.modes: the combine modes are one table (MODE_TABLE), and no mode name is compared
outside it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest

from attn_contracts.modes import MODE_TABLE
from attn_contracts.modes import MODES
from attn_contracts.modes import Mode
from attn_contracts.modes import mode_spec
from attn_contracts.modes import resolve
from attn_contracts.setting import CombineSetting

ROOT = Path(__file__).resolve().parents[1]


def test_the_mode_table_is_the_one_source() -> None:
    assert MODES == tuple(MODE_TABLE) == get_args(Mode)
    assert get_args(CombineSetting.model_fields["mode"].annotation) == MODES
    with pytest.raises(ValueError, match="allowed: merge, ag_rs"):
        mode_spec("a2a_fast")
    assert resolve("a2a_best", lambda c: None).runs.name == "a2a_direct"
    assert resolve("ag_rs", lambda c: "never asked").runs.name == "ag_rs"
    with pytest.raises(ValueError, match="no candidate can run"):
        resolve("a2a_best", lambda c: f"{c.name} is off")


def test_no_mode_name_is_compared_outside_the_mode_table() -> None:
    compare = re.compile(r"\bmode\s*(==|!=|\bin\b|\bnot in\b)|"
                         r"(==|!=)\s*['\"](merge|ag_rs|a2a|ar|a2a_direct|a2a_best)['\"]")
    found = []
    for folder in ("attn_contracts", "combine"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name == "modes.py" or "lint" in path.parts or "cli" in path.parts:
                continue  # the linter's and the CLI's "mode" are other things (flags, files)
            for i, line in enumerate(path.read_text().splitlines(), 1):
                if compare.search(line.split("#")[0]) and "kernel ==" not in line:
                    found.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert found == []
