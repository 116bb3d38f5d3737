"""The hand-kept facts about an engine that its code does not say in a form a mapping can read:
``backends/catalog/engines/<engine>.toml``, a table of entries per kind, each holding for the
releases in its ``versions`` (PEP 440) and citing the file (and class or function) it describes.

Each kind of entry is a frozen pydantic model that forbids unknown keys, and each engine's file
is one model of its tables: the file is validated as it is read (once), and a damaged one is one
:class:`EngineDataError` naming the file, the table, the entry and the field (a broken
installation, told as a damaged ``rules.toml`` is).

A release that no entry of a kind holds is read with the newest entry, and told so (never passed
silently). ``tools/check_catalog.py`` checks every entry against the releases it covers.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from collections.abc import Sequence
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Annotated
from typing import Any
from typing import ClassVar
from typing import Literal
from typing import TypeVar
from typing import overload

from pydantic import AfterValidator
from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import StrictBool
from pydantic import StrictFloat
from pydantic import StrictInt
from pydantic import StrictStr
from pydantic import StringConstraints
from pydantic import ValidationError

from attn_contracts._tables import as_pairs
from attn_contracts.findings import RulesError
from attn_contracts.findings import read_data_text
from attn_contracts.records import NAME_RE
from attn_contracts.versions import in_range

__all__ = [
    "DcpCallEntry",
    "DcpCombineEntry",
    "DeclarationEntry",
    "EngineData",
    "EngineDataError",
    "Entry",
    "EnumEntry",
    "RegistryEntry",
    "SglangData",
    "VllmData",
    "engine_data",
]


class EngineDataError(RulesError):
    """An engine data file shipped with the package is missing or damaged: a broken installation,
    told in one line naming the file, the table, the entry and the field (the CLI exits 2, as for
    a damaged ``rules.toml``)."""


def _specifier(value: str) -> str:
    from packaging.specifiers import InvalidSpecifier
    from packaging.specifiers import SpecifierSet

    try:
        if not list(SpecifierSet(value)):
            raise ValueError(f"{value!r} holds for every release (allowed: a PEP 440 range, "
                             "e.g. '>=0.25' or '>=0.5.3,<0.6')")
    except InvalidSpecifier:
        raise ValueError(f"{value!r} is not a PEP 440 version range (allowed: e.g. '>=0.25' "
                         "or '>=0.5.3,<0.6')") from None
    return value


#: a PEP 440 range that some release is outside of
_Versions = Annotated[str, AfterValidator(_specifier)]
#: a Python name: a class, a function or an attribute
_Name = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
#: a module's path in the release, from its top-level package (``vllm/...py``)
_File = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z0-9_]+)*\.py$")]
_Source = Annotated[str, StringConstraints(min_length=1)]
_Record = Annotated[str, StringConstraints(pattern=NAME_RE)]
_Literal = StrictBool | StrictInt | StrictFloat | StrictStr


class Entry(BaseModel):
    """One entry: the releases it holds for, the file it cites and the citation."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    versions: _Versions
    file: _File
    source: _Source

    # what tools/check_catalog.py looks for in the cited file; each kind says what it names
    def cited_class(self) -> str:
        """The class the entry names in its file ("" for none)."""
        return ""

    def cited_function(self) -> str:
        """The function (a method, with a class) the entry names in its file ("" for none)."""
        return ""

    def cited_attrs(self) -> tuple[str, ...]:
        """The attributes the entry says the class assigns in its body."""
        return ()


class EnumEntry(Entry):
    """vLLM: where ``AttentionBackendEnum`` lives (its members' values are class paths)."""

    cls: _Name = Field(alias="class")

    def cited_class(self) -> str:
        return self.cls


class DeclarationEntry(Entry):
    """vLLM: the impl class attributes that declare the LSE (``returns``: that it is returned;
    ``base``: its base) and ``capability``, attributes that sound like it but say neither."""

    cls: _Name = Field(alias="class")
    returns: tuple[_Name, ...] = Field(min_length=1)
    base: tuple[_Name, ...]
    capability: tuple[_Name, ...]

    def cited_class(self) -> str:
        return self.cls

    def cited_attrs(self) -> tuple[str, ...]:
        return (*self.returns, *self.base)


class DcpCallEntry(Entry):
    """vLLM: the branch an impl's call site takes under DCP: the kernel ``records`` of that
    branch and the keyword arguments of its ``call``."""

    cls: _Name = Field(alias="class")
    records: tuple[_Record, ...] = Field(min_length=1)
    call: Annotated[tuple[tuple[_Name, _Literal], ...], *as_pairs()]

    def cited_class(self) -> str:
        return self.cls


class RegistryEntry(Entry):
    """SGLang: where the attention backends are named: a decorator ``function`` that registers a
    factory per name, or (``branches``) the method ``function`` of ``class`` whose ``if name ==
    "..."`` branches build them."""

    cls: _Name | Literal[""] = Field("", alias="class")
    function: _Name
    form: Literal["decorator", "branches"]

    def cited_class(self) -> str:
        return self.cls

    def cited_function(self) -> str:
        return self.function


class DcpCombineEntry(Entry):
    """SGLang: where an MLA layer hands its decode partial and LSE to the DCP combine: the
    backends' ``decode_method`` whose return the LSE is, and how the backends test for DCP (flags
    true under it, sizes > 1 under it)."""

    decode_method: _Name
    dcp_flags: tuple[_Name, ...]
    dcp_sizes: tuple[_Name, ...]
    #: the layer's attribute that holds the name its backend was registered under (the base
    #: keyword is read with it each registered name); None: only a function of the name is read
    name_attr: _Name | None = None
    #: other files whose layers hand their partial to the combine the same way (the ROCm
    #: forward of the same layer), each read where the release has it
    also: tuple[_File, ...] = ()

    @property
    def files(self) -> tuple[str, ...]:
        """Every file where a layer hands its decode partial and LSE to the combine."""
        return (self.file, *self.also)


E = TypeVar("E", bound=Entry)


class EngineData(BaseModel):
    """One engine's file, parsed: each table is a field, its entries in file order (oldest range
    first)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: ClassVar[str]
    display: ClassVar[str]

    @property
    def file(self) -> str:
        return f"{self.engine}.toml"

    @property
    def kinds(self) -> dict[str, tuple[Entry, ...]]:
        """Table name → its entries, in the file's order of tables."""
        return {name: getattr(self, name) for name in type(self).model_fields}

    def pick(self, entries: Sequence[E], version: str | None) -> tuple[E, str]:
        """The entry for ``version``, and a note when it is only the newest one (an unseen or
        unknown release)."""
        for e in entries:
            if version and in_range(e.versions, version, unparsed=False):
                return e, ""
        newest = entries[-1]
        return newest, (f"no entry of {self.file} holds {self.display} "
                        f"{version or '(version unknown)'}; read with the newest ({newest.versions})")

    def all_for(self, entries: Sequence[E], version: str | None) -> list[E]:
        return [e for e in entries if version and in_range(e.versions, version, unparsed=False)]


class VllmData(EngineData):
    """``vllm.toml``."""

    engine: ClassVar[str] = "vllm"
    display: ClassVar[str] = "vLLM"

    enum: tuple[EnumEntry, ...] = Field(min_length=1)
    declaration: tuple[DeclarationEntry, ...] = Field(min_length=1)
    dcp_call: tuple[DcpCallEntry, ...] = ()


class SglangData(EngineData):
    """``sglang.toml``."""

    engine: ClassVar[str] = "sglang"
    display: ClassVar[str] = "SGLang"

    registry: tuple[RegistryEntry, ...] = Field(min_length=1)
    dcp_combine: tuple[DcpCombineEntry, ...] = Field(min_length=1)


_MODELS: Mapping[str, type[EngineData]] = {m.engine: m for m in (VllmData, SglangData)}


@overload
def engine_data(engine: Literal["vllm"]) -> VllmData: ...
@overload
def engine_data(engine: Literal["sglang"]) -> SglangData: ...
@overload
def engine_data(engine: str) -> EngineData: ...
def engine_data(engine: str) -> EngineData:
    """``backends/catalog/engines/<engine>.toml``, validated (read once)."""
    if engine not in _MODELS:
        raise ValueError(f"no engine data for {engine!r} (allowed: {', '.join(_MODELS)})")
    return _load(engine)


@cache
def _load(engine: str) -> EngineData:
    path = resources.files("attn_contracts.backends") / "catalog" / "engines" / f"{engine}.toml"
    return parse(_MODELS[engine], str(path), _read(path))


def _read(path: Traversable) -> str:
    return read_data_text(path, "the engine data", EngineDataError)


D = TypeVar("D", bound=EngineData)


def parse(model: type[D], path: str, text: str) -> D:
    """``text`` (the file at ``path``) as ``model``; a file that is not TOML, or whose tables or
    entries are not what ``model`` allows, is one :class:`EngineDataError` naming each problem
    by table, entry and field."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise EngineDataError(f"{path}: the engine data is not valid TOML ({err}); reinstall "
                              "attn-contracts") from None
    try:
        return model.model_validate(raw)
    except ValidationError as err:
        errors = err.errors()
        # a table whose entry failed is also "too short" (pydantic counts only the valid ones)
        failed = {e["loc"][0] for e in errors if len(e["loc"]) > 1}
        problems = "; ".join(
            f"no [[{e['loc'][0]}]] table" if len(e["loc"]) == 1 and e["type"] == "missing" else
            _where(raw, e["loc"], model) + f": {e['msg'].removeprefix('Value error, ')}"
            for e in errors if not (e["loc"] in {(t,) for t in failed} and e["type"] == "too_short"))
        raise EngineDataError(f"{path}: {problems}; reinstall attn-contracts") from None


def _where(raw: Mapping[str, Any], loc: tuple[int | str, ...], model: type[EngineData]) -> str:
    """A problem's place in words: ``[[declaration]] number 2 (AttentionImplBase, versions
    >=0.25), field returns``; an unknown table lists the known ones."""
    if not loc:
        return "the file"
    table = str(loc[0])
    if table not in model.model_fields:
        return f"table {table!r} (allowed tables: {', '.join(model.model_fields)})"
    rows = raw.get(table)
    if len(loc) < 2 or not isinstance(loc[1], int) or not isinstance(rows, list):
        return f"[[{table}]]"
    row = rows[loc[1]]
    named = ""
    if isinstance(row, dict):
        said = [".".join(str(row[k]) for k in ("class", "function") if row.get(k)) or
                str(row.get("file", "")), f"versions {row['versions']}" if "versions" in row else ""]
        named = f" ({', '.join(x for x in said if x)})" if any(said) else ""
    field = ".".join(map(str, loc[2:]))
    return f"[[{table}]] number {loc[1] + 1}{named}" + (f", field {field}" if field else "")
