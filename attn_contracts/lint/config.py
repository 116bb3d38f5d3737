"""Linter settings: defaults, overridden by ``[tool.attn-contracts]`` of the linted project."""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from attn_contracts.findings import Code

__all__ = ["ConfigError", "LintConfig", "find_pyproject", "load_config", "unknown_codes"]


def unknown_codes(selectors: tuple[str, ...]) -> list[str]:
    """Selectors that are no code and no prefix of one (``AC3``, ``bogus``): selecting them
    would silently lint nothing."""
    known = [c.value for c in Code]
    return [s for s in selectors if not any(k.startswith(s) for k in known)]


def known_codes_text() -> str:
    return ", ".join(c.value for c in Code)


class ConfigError(ValueError):
    """The project's ``[tool.attn-contracts]`` table is invalid (exit code 2)."""


class LintConfig(BaseModel):
    """Names the linter knows. Keys in pyproject.toml use dashes (``returns-attrs``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True,
                              alias_generator=lambda s: s.replace("_", "-"))

    #: class attributes that say "this backend returns LSE" (True) — any of them. vLLM's
    #: ``supports_dcp`` is not one: a layer base class sets it without returning an LSE
    returns_attrs: tuple[str, ...] = ("can_return_lse_for_decode",)
    #: class attributes that declare the LSE base
    base_attrs: tuple[str, ...] = ("lse_base_on_e",)
    #: further capability attributes whose getattr default / assert is flagged (AC009, AC011)
    capability_attrs: tuple[str, ...] = ("supports_dcp",)
    #: combine functions whose base must come from a record or class, not a literal (AC003)
    combine_functions: tuple[str, ...] = (
        "cp_lse_ag_out_rs", "dcp_a2a_lse_reduce", "correct_attn_out", "plan_combine",
        "merge_attn_states")
    #: keyword arguments of those functions that carry the base
    base_keywords: tuple[str, ...] = ("is_lse_base_on_e", "lse_base_on_e", "lse_base", "base",
                                      "return_lse_base_on_e")
    #: TOML files of the linted project that hold its own ``[[record]]``/``[[consumer]]`` tables
    #: (relative to the pyproject.toml); they teach the flow rules the project's functions
    record_files: tuple[str, ...] = ()
    #: library → release of the linted tree (``{ vllm = "0.33.0" }``), where the tree does not
    #: say (no dist-info, no version.py): picks the records and function paths of that release
    versions: dict[str, str] = Field(default_factory=dict)
    select: tuple[str, ...] = Field(default=())
    ignore: tuple[str, ...] = Field(default=())

    @field_validator("select", "ignore", mode="after")
    @classmethod
    def _known_codes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        value = tuple(v.strip().upper() for v in value)
        bad = unknown_codes(value)
        if bad:
            raise ValueError(f"unknown finding code(s) {', '.join(bad)} (known: "
                             f"{known_codes_text()}; a prefix such as AC00 selects several)")
        return value

    @property
    def capabilities(self) -> frozenset[str]:
        return frozenset((*self.returns_attrs, *self.base_attrs, *self.capability_attrs))


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start``."""
    here = start.resolve()
    for folder in (here, *here.parents) if here.is_dir() else here.parents:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_config(pyproject: Path | None) -> LintConfig:
    if pyproject is None:
        return LintConfig()
    try:
        table = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {}).get(
            "attn-contracts", {})
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise ConfigError(f"{pyproject}: cannot read [tool.attn-contracts]: {err}") from err
    if isinstance(table, dict) and isinstance(table.get("record-files"), list):
        here = pyproject.parent
        table = {**table, "record-files": [str(here / f) if isinstance(f, str) else f
                                           for f in table["record-files"]]}
    try:
        return LintConfig.model_validate(table)
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        keys = ", ".join(sorted(n.replace("_", "-") for n in LintConfig.model_fields))
        raise ConfigError(f"{pyproject}: invalid [tool.attn-contracts]: {problems} (allowed "
                          f"keys: {keys})") from err
