"""attn_contracts.findings.Location: a finding's place as fields (path, line, column), from the
parser to every output format, and read back from text only where text comes in (issue 39
item 2)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter

from attn_contracts.findings import Code
from attn_contracts.findings import Finding
from attn_contracts.findings import Location
from attn_contracts.findings import OptionalLocation
from attn_contracts.lint import sarif
from attn_contracts.lint.inferred import Kernel
from attn_contracts.lint.report import render
from attn_contracts.lint.values import Lit
from attn_contracts.lint.values import Param
from attn_contracts.lint.values import Source
from attn_contracts.lint.values import repr_as_text
from attn_contracts.lint.values import source_order

#: a path with colons in a folder and in the file name (a Windows drive, a URL-ish folder)
COLON_PATH = "C:/work/a:b/x:1.py"


def _finding(at: Location | None, code: Code = Code.AC016) -> Finding:
    return Finding(code, "s", "the message", hint="h", field="base", found="2", allowed="e",
                   location=at)


# --- the type ------------------------------------------------------------------------------------
def test_the_three_kinds_of_place_and_their_text() -> None:
    assert str(Location("a.py", 3, 7)) == "a.py:3:7" and Location("a.py", 3, 7).point == (3, 7)
    assert str(Location("vllm/b.py", 798)) == "vllm/b.py:798"
    assert Location("vllm/b.py", 798).point is None  # a line: no column to point at
    assert str(Location("records.toml")) == "records.toml" and Location("x").point is None


def test_a_column_without_a_line_is_refused() -> None:
    with pytest.raises(ValueError, match=r"a column \(4\) without a line in 'a.py'"):
        Location("a.py", None, 4)


@pytest.mark.parametrize(("text", "place"), [
    ("a.py:12:5", Location("a.py", 12, 5)),
    ("a.py:12", Location("a.py", 12)),
    (f"{COLON_PATH}:3:1", Location(COLON_PATH, 3, 1)),
    ("a.py:x:1", Location("a.py:x", 1)),  # the path may hold colons: the line is the last number
    ("plugin p (pkg.mod:f)", Location("plugin p (pkg.mod:f)")),
    ("a.py:007", Location("a.py:007")),  # not a number as a Location writes one: no line
])
def test_text_reads_as_the_place_it_spells(text: str, place: Location) -> None:
    assert Location.parse(text) == place


@given(st.text(min_size=1))
def test_any_text_reads_back_into_a_place_that_writes_it_again(text: str) -> None:
    """What comes in as text goes out as the same text, whatever place it was read as."""
    at = Location.parse(text)
    assert at is not None and str(at) == text


# --- JSON: written from the fields, read back at the boundary -----------------------------------
@pytest.mark.parametrize("at", [Location(COLON_PATH, 3, 7), Location("vllm/b.py", 798),
                                Location("plugin p (pkg.mod:f)"), None])
def test_a_finding_goes_through_json_and_back_with_its_place(at: Location | None) -> None:
    f = _finding(at)
    text = json.dumps(f.to_json())
    assert json.loads(text)["location"] == ("" if at is None else str(at))
    back = Finding.from_json(json.loads(text))
    assert back == f and back.location == at and back.to_json() == f.to_json()


def test_the_lint_json_format_writes_the_fields_and_the_text() -> None:
    f = _finding(Location(COLON_PATH, 3, 7))
    (row,) = json.loads(render([f], "json"))
    assert (row["path"], row["line"], row["col"]) == (COLON_PATH, 3, 7)
    assert row["location"] == f"{COLON_PATH}:3:7"
    assert Finding.from_json(row).location == Location(COLON_PATH, 3, 7)


# --- SARIF and GitHub: the fields, never a split of the text ---------------------------------------
def test_sarif_reads_the_path_line_and_column(tmp_path: Path) -> None:
    inside = tmp_path / "pkg:a" / "m:1.py"
    log = sarif([_finding(Location(str(inside), 12, 5))], root=tmp_path)
    (result,) = log["runs"][0]["results"]  # type: ignore[index]
    physical = result["locations"][0]["physicalLocation"]
    assert physical["region"] == {"startLine": 12, "startColumn": 5}
    # the whole path, colons included, is the artifact (percent-encoded, below the root)
    assert physical["artifactLocation"] == {"uri": "pkg%3Aa/m%3A1.py", "uriBaseId": "%SRCROOT%"}


def test_github_annotations_read_the_path_line_and_column() -> None:
    line = render([_finding(Location(COLON_PATH, 12, 5))], "github")
    assert line == ("::error file=C%3A/work/a%3Ab/x%3A1.py,line=12,col=5,title=AC016::"
                    "the message")


@pytest.mark.parametrize("fmt", ["json", "github"])
@pytest.mark.parametrize("at", [Location("records.toml"), Location("vllm/b.py", 798), None])
def test_the_file_formats_refuse_a_place_that_is_no_point(fmt: str, at: Location | None) -> None:
    """JSON, SARIF and GitHub need a point of a file; a unit, a line or no place is named in
    the refusal, never written as a made-up line."""
    shown = "" if at is None else str(at)
    with pytest.raises(ValueError, match=f"is located at {shown!r}, not at a file's"):
        render([_finding(at)], fmt)
    with pytest.raises(ValueError, match="not at a file's path:line:col"):
        sarif([_finding(at)])


def test_the_text_format_writes_any_place_as_its_text() -> None:
    assert render([_finding(Location("records.toml"))], "text").startswith(
        "records.toml: AC016 the message")
    assert render([_finding(Location(COLON_PATH, 3, 7))], "text").startswith(
        f"{COLON_PATH}:3:7: AC016 ")


# --- a stored mapping (pydantic) keeps the bytes of the text -------------------------------------
@dataclass(frozen=True)
class _Stored:
    where: Location
    maybe: OptionalLocation = None


def test_pydantic_stores_a_place_as_its_text_and_reads_it_back() -> None:
    adapter = TypeAdapter(_Stored)
    stored = _Stored(Location("vllm/b.py", 798), Location(COLON_PATH, 2, 5))
    data = adapter.dump_python(stored, mode="json")
    assert data == {"where": "vllm/b.py:798", "maybe": f"{COLON_PATH}:2:5"}
    assert adapter.validate_python(data) == stored
    assert adapter.dump_python(_Stored(Location("u")), mode="json")["maybe"] == ""
    assert adapter.validate_python({"where": "u", "maybe": ""}).maybe is None
    finding = TypeAdapter(Finding).dump_python(_finding(Location("a.py", 1, 2)), mode="json")
    assert finding["location"] == "a.py:1:2"


# --- the fixed orders by repr are those of the text ---------------------------------------------
def test_orders_by_repr_are_the_orders_the_text_gave() -> None:
    """``repr_as_text`` is the repr the values had when places were text: the kernel a message
    names first, and the sources' order, do not change with the type of a place."""
    new = [Kernel("r", "k", Location("a.py", line, 1), "e") for line in (1, 10, 9)]
    old = [Kernel("r", "k", f"a.py:{line}:1", "e") for line in (1, 10, 9)]  # type: ignore[arg-type]
    assert [repr_as_text(k) for k in new] == [repr(k) for k in old]
    assert [k.where.line for k in sorted(new, key=repr_as_text)] == [10, 1, 9]  # a:10 < a:1:
    default = Param("base", "f", Lit(True, None), "m.py")  # no place (None) reads as '' did
    was = Param("base", "f", Lit(True, "", omitted=""), "m.py")  # type: ignore[arg-type]
    assert repr_as_text(default) == repr(was)
    shifted = Source("param:m.py:f:lse", None, "p", shifts=(("e", Location("m.py", 4, 9), "× ln 2"),))
    assert source_order(shifted)[1] == repr(
        Source("param:m.py:f:lse", None, "p", shifts=(("e", "m.py:4:9", "× ln 2"),)))  # type: ignore[arg-type]
