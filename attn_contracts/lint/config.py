"""Linter settings: defaults, overridden by ``[tool.attn-contracts]`` of the linted project."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import ValidationError
from pydantic import field_validator

from attn_contracts.findings import Code
from attn_contracts.findings import selected_codes
from attn_contracts.findings import selectors_text
from attn_contracts.sources import FileReadError
from attn_contracts.sources import error_position
from attn_contracts.sources import read_bytes
from attn_contracts.versions import library_key

__all__ = ["ConfigError", "LintConfig", "config_for", "find_pyproject", "load_config",
           "unknown_codes"]


def unknown_codes(selectors: tuple[str, ...]) -> list[str]:
    """Selectors that name no rule (``AC3``, ``bogus``): selecting them would silently lint
    nothing. A selector is a code or a prefix of codes, a rule's name or a group
    (:func:`~attn_contracts.findings.selected_codes`)."""
    return [s for s in selectors if selected_codes(s) is None]


def known_codes_text() -> str:
    """What a selector may be (every code, name and group), for the message that refuses one."""
    return selectors_text()


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

    @field_validator("versions", mode="after")
    @classmethod
    def _pep440_versions(cls, value: dict[str, str]) -> dict[str, str]:
        """Each key a distribution name (PEP 508), each value a PEP 440 version; keys are kept
        in the one spelling records use (:func:`~attn_contracts.versions.library_key`)."""
        from packaging.version import InvalidVersion
        from packaging.version import Version

        out: dict[str, str] = {}
        for name, version in value.items():
            if not _DIST_NAME.match(name):
                raise ValueError(f"{name!r} = {version!r}: {name!r} is not a distribution name "
                                 "(allowed: letters, digits, '-', '_', '.', starting and ending "
                                 "with a letter or digit, as vllm or flashinfer-python)")
            try:
                Version(version)
            except InvalidVersion:
                raise ValueError(f"{name} = {version!r}: not a PEP 440 version (allowed: a "
                                 "release such as \"0.33.0\" or \"0.7.2.post1\")") from None
            key = library_key(name)
            if key in out and out[key] != version:
                raise ValueError(f"{name} = {version!r}: the same library as another key, which "
                                 f"says {out[key]!r} (allowed: one version per library)")
            out[key] = version
        return out

    @field_validator("select", "ignore", mode="after")
    @classmethod
    def _known_codes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        value = tuple(v.strip() for v in value)
        bad = unknown_codes(value)
        if bad:
            raise ValueError(f"unknown rule selector(s) {', '.join(bad)} (allowed: "
                             f"{known_codes_text()})")
        return value

    def selects(self, code: Code) -> bool:
        """Whether a finding of ``code`` is reported: among ``select`` (all when empty) and not
        among ``ignore``, each a code prefix, a rule name or a group."""
        def named(selectors: tuple[str, ...]) -> frozenset[Code]:
            return frozenset().union(*(selected_codes(s) or () for s in selectors))

        return (not self.select or code in named(self.select)) and code not in named(self.ignore)

    @property
    def capabilities(self) -> frozenset[str]:
        return frozenset((*self.returns_attrs, *self.base_attrs, *self.capability_attrs))


#: a distribution name (PEP 508)
_DIST_NAME = re.compile(r"^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$", re.IGNORECASE)


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start``."""
    here = start.resolve()
    for folder in (here, *here.parents) if here.is_dir() else here.parents:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def config_for(paths: Sequence[Path]) -> LintConfig:
    """The one configuration of a run over ``paths``: each path's nearest ``pyproject.toml``
    (:func:`find_pyproject`) applies to it, so the run has one only when they all say the same
    (the same file, or files whose ``[tool.attn-contracts]`` settings are equal). Two projects
    that differ are one :class:`ConfigError` naming both: whichever came first would otherwise
    decide the other's verdict. The files are read in path order, so the error a run reports
    never depends on the order of its arguments either."""
    found = {(find_pyproject(p), p) for p in paths}
    pyprojects = sorted({f for f, _ in found}, key=lambda f: (f is not None, str(f)))
    configs = {f: load_config(f) for f in pyprojects}
    first, *others = pyprojects
    other = next((f for f in others if _same(configs[f]) != _same(configs[first])), None)
    if other is None:
        return configs[first]

    def name(f: Path | None) -> str:
        owned = sorted(str(p) for g, p in found if g == f)
        more = f" and {len(owned) - 3} more" if len(owned) > 3 else ""
        return (f"{', '.join(owned[:3])}{more} "
                f"({f if f is not None else 'no pyproject.toml: the defaults'})")

    raise ConfigError(f"the paths belong to projects whose [tool.attn-contracts] settings differ: "
                      f"{name(first)} and {name(other)}; lint each project on its own, or give "
                      "--config FILE to apply one to all")


def _same(cfg: LintConfig) -> tuple[dict[str, Any], frozenset[str]]:
    """What makes two configurations lint alike: the values, and which were set (a setting
    given, even to its default, is read as the project's word: ``base-attrs``)."""
    return cfg.model_dump(), frozenset(cfg.model_fields_set)


def load_config(pyproject: Path | None) -> LintConfig:
    """The ``[tool.attn-contracts]`` table of ``pyproject`` (defaults when None). Any problem
    is one :class:`ConfigError` line: a file that is not a regular file (a FIFO is never opened),
    too large, not UTF-8 or not TOML (with the parser's line and column), a table of the wrong
    type, or a setting the model refuses."""
    if pyproject is None:
        return LintConfig()
    try:
        text = read_bytes(pyproject, "pyproject.toml").decode("utf-8")
        doc = tomllib.loads(text)
    except FileReadError as err:
        raise ConfigError(str(err)) from err
    except UnicodeDecodeError as err:
        raise ConfigError(f"{pyproject}: not UTF-8 (byte offset {err.start}); a pyproject.toml "
                          "is UTF-8 TOML") from err
    except tomllib.TOMLDecodeError as err:
        line, col = error_position(err)
        raise ConfigError(f"{pyproject}:{line}:{col}: not valid TOML: {err}") from err
    except RecursionError as err:
        raise ConfigError(f"{pyproject}: not valid TOML: nested deeper than the parser can "
                          "read") from err
    table = _table(_table(doc, "tool", pyproject), "attn-contracts", pyproject)
    if isinstance(table.get("record-files"), list):
        here = pyproject.parent
        table = {**table, "record-files": [str(here / f) if isinstance(f, str) else f
                                           for f in table["record-files"]]}
    try:
        return LintConfig.model_validate(table)
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: "
                             f"{e['msg'].removeprefix('Value error, ')}" for e in err.errors())
        keys = ", ".join(sorted(n.replace("_", "-") for n in LintConfig.model_fields))
        unknown = any(e["type"] == "extra_forbidden" for e in err.errors())
        raise ConfigError(f"{pyproject}: invalid [tool.attn-contracts]: {problems}"
                          + (f" (allowed keys: {keys})" if unknown else "")) from err


def _table(doc: dict[str, Any], key: str, pyproject: Path) -> dict[str, Any]:
    value = doc.get(key, {})
    if not isinstance(value, dict):
        where = "[tool.attn-contracts]" if key == "attn-contracts" else f"[{key}]"
        raise ConfigError(f"{pyproject}: {where} must be a table, found {type(value).__name__} "
                          f"{value!r:.60}")
    return value
