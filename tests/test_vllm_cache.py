"""The on-disk cache of derived vLLM mappings (issue 35 item 2): keyed by the files read, safe
against corrupt, foreign and concurrent files, never a different mapping than a derivation.

A scratch "vLLM tree" stands in for an install, and a counting ``derive`` for the derivation: what
is asserted is how often it runs, never how long anything takes."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from attn_contracts.findings import Code
from attn_contracts.findings import Finding
from attn_contracts.findings import Location
from attn_contracts.integrations import vllm_cache
from attn_contracts.integrations.vllm_source import STARTUP_SCOPE
from attn_contracts.integrations.vllm_source import Attr
from attn_contracts.integrations.vllm_source import Derived
from attn_contracts.integrations.vllm_source import MemberFacts

SCOPE = STARTUP_SCOPE


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A site folder with a ``vllm`` package, its attention code and its dist-info; the cache
    goes to a scratch XDG cache folder."""
    root = tmp_path / "site"
    attention = root / "vllm" / "v1" / "attention"
    attention.mkdir(parents=True)
    (root / "vllm" / "__init__.py").write_text("__version__ = '0.32.0'\n")
    (attention / "__init__.py").write_text("")
    (attention / "backend.py").write_text("class AttentionImplBase:\n    lse_base_on_e = True\n")
    info = root / "vllm-0.32.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Name: vllm\nVersion: 0.32.0\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return root


def _derived(root: Path, base: object = True) -> Derived:
    finding = Finding(Code.AC018, "vllm.x", "a row empty on every shard",
                      found=["a", 1], location=Location("vllm/v1/attention/backend.py", 2, 5))
    member = MemberFacts("FLASH_ATTN", "vllm.v1.attention.backends.x.B", "vllm.x.Impl",
                         attrs={"lse_base_on_e": Attr(base, Location("vllm/x.py", 2), "Impl", False)},
                         mro=(("vllm.x", "Impl"),), records=("flash_attn.fa3",),
                         observed=(("flash_attn.fa3", ("e",)),),
                         call=(("backend", "cute-dsl"), ("flag", True)))
    return Derived(root, "0.32.0", ("can_return_lse_for_decode",), ("lse_base_on_e",),
                   {"FLASH_ATTN": member}, ("vllm/x.py:9 (reads lse_base_on_e of the impl)",),
                   [], [finding], {"FLASH_ATTN": [finding]})


class Counting:
    """A derivation that counts its runs."""

    def __init__(self, root: Path, base: object = True) -> None:
        self.root, self.base, self.runs = root, base, 0

    def __call__(self) -> Derived:
        self.runs += 1
        return _derived(self.root, self.base)


def _cached(root: Path, derive: Counting) -> Any:
    return vllm_cache.cached(root, "0.32.0", SCOPE, derive, Derived)


def _files() -> list[Path]:
    return sorted(vllm_cache.cache_dir().glob("*.json"))


def test_a_second_start_reads_the_mapping_from_the_cache(tree: Path) -> None:
    derive = Counting(tree)
    first = _cached(tree, derive)
    again = _cached(tree, derive)
    assert derive.runs == 1 and again == first == _derived(tree)
    (path,) = _files()
    assert path.parent == Path(os.environ["XDG_CACHE_HOME"]) / "attn-contracts" / "vllm-mapping"
    assert not list(path.parent.glob(".*"))  # no temporary file left


@pytest.mark.parametrize("change", ["source", "new file", "dist-info", "version"])
def test_any_file_read_changed_is_another_key(tree: Path, change: str) -> None:
    derive = Counting(tree)
    key, _ = vllm_cache.key_for(tree, "0.32.0", SCOPE)
    _cached(tree, derive)
    version = "0.32.0"
    if change == "source":
        (tree / "vllm/v1/attention/backend.py").write_text(
            "class AttentionImplBase:\n    lse_base_on_e = False\n")
    elif change == "new file":
        (tree / "vllm/v1/attention/composite.py").write_text("X = 1\n")
    elif change == "dist-info":
        (tree / "vllm-0.32.0.dist-info/METADATA").write_text(
            "Name: vllm\nVersion: 0.32.0\nRequires-Dist: flashinfer-python==0.7.4\n")
    else:
        version = "0.32.1"
    assert vllm_cache.key_for(tree, version, SCOPE)[0] != key
    vllm_cache.cached(tree, version, SCOPE, derive, Derived)
    assert derive.runs == 2


def test_files_outside_what_is_read_keep_the_key(tree: Path) -> None:
    """Nor is another distribution installed beside it: the derivation reads the built-in
    catalog only, never a plugin's records."""
    key, inputs = vllm_cache.key_for(tree, "0.32.0", SCOPE)
    (tree / "vllm" / "entrypoints").mkdir()
    (tree / "vllm" / "entrypoints" / "api.py").write_text("X = 1\n")  # outside the scope
    (tree / "records_plugin-1.0.dist-info").mkdir()
    assert vllm_cache.key_for(tree, "0.32.0", SCOPE)[0] == key
    assert sorted(inputs["files"]) == ["vllm/v1/attention/__init__.py",
                                       "vllm/v1/attention/backend.py"]


@pytest.mark.parametrize("damage", ["garbage", "truncated", "another key", "edited content",
                                    "wrong types", "another tree", "empty"])
def test_a_corrupt_or_foreign_file_is_derived_again_and_rewritten(tree: Path,
                                                                   damage: str) -> None:
    derive = Counting(tree)
    _cached(tree, derive)
    (path,) = _files()
    text = path.read_text()
    doc = json.loads(text)
    if damage == "garbage":
        path.write_bytes(b"\x00\xffnot json")
    elif damage == "truncated":
        path.write_text(text[: len(text) // 2])
    elif damage == "another key":
        doc["key"] = "0" * 64
        path.write_text(json.dumps(doc))
    elif damage == "edited content":  # the declaration flipped, the key kept: a verdict changed
        derived = json.loads(doc["derived"])
        derived["members"]["FLASH_ATTN"]["attrs"]["lse_base_on_e"]["value"] = False
        doc["derived"] = json.dumps(derived)
        path.write_text(json.dumps(doc))
    elif damage == "wrong types":
        derived = json.loads(doc["derived"])
        derived["members"] = [1, 2]
        doc["derived"] = json.dumps(derived)
        doc["digest"] = vllm_cache._content_digest(doc["derived"])
        path.write_text(json.dumps(doc))
    elif damage == "another tree":
        derived = json.loads(doc["derived"])
        derived["root"] = "/elsewhere"
        doc["derived"] = json.dumps(derived)
        doc["digest"] = vllm_cache._content_digest(doc["derived"])
        path.write_text(json.dumps(doc))
    else:
        path.write_text("")
    assert _cached(tree, derive) == _derived(tree)
    assert derive.runs == 2
    assert _cached(tree, derive) == _derived(tree) and derive.runs == 2  # rewritten whole


def test_one_release_in_two_folders_is_one_entry_read_at_each(tree: Path, tmp_path: Path) -> None:
    """The stored mapping names its tree by a token: the same files installed elsewhere read it
    back with their own folder, in its root and in every path below it."""
    import dataclasses
    import shutil

    def at(root: Path) -> Derived:
        d = _derived(root)
        where = Location(f"{root}/vllm/v1/attention/backend.py", 2, 5)
        return dataclasses.replace(d, lint=[dataclasses.replace(d.lint[0], location=where)])

    assert vllm_cache.cached(tree, "0.32.0", SCOPE, lambda: at(tree), Derived) == at(tree)
    assert str(tree) not in _files()[0].read_text()
    other = tmp_path / "other-site"
    shutil.copytree(tree, other)
    assert vllm_cache.key_for(other, "0.32.0", SCOPE) == vllm_cache.key_for(tree, "0.32.0", SCOPE)
    moved = Counting(other)
    assert vllm_cache.cached(other, "0.32.0", SCOPE, moved, Derived) == at(other)
    assert moved.runs == 0


def _ship(tree: Path, folder: Path, derived: Derived) -> Path:
    from pydantic import TypeAdapter

    key, _ = vllm_cache.key_for(tree, "0.32.0", SCOPE)
    text = vllm_cache.stored_text(key, derived, TypeAdapter(Derived))
    assert text is not None
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (vllm_cache.file_name("0.32.0", key) + ".gz")
    import gzip

    path.write_bytes(gzip.compress(text.encode()))
    return path


def test_a_mapping_shipped_for_the_release_is_read_instead_of_deriving(
        tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = tmp_path / "shipped"
    monkeypatch.setattr(vllm_cache, "shipped_dir", lambda: shipped)
    _ship(tree, shipped, _derived(tree))
    derive = Counting(tree)
    assert _cached(tree, derive) == _derived(tree) and derive.runs == 0
    assert not _files()  # read where it is: nothing copied into the user's cache


@pytest.mark.parametrize("doubt", ["another file", "corrupt", "another project"])
def test_a_shipped_mapping_that_does_not_match_is_derived(
        tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, doubt: str) -> None:
    """A patched install, a damaged file or an edited attn-contracts (another fingerprint):
    derived, as with no shipped file."""
    shipped = tmp_path / "shipped"
    monkeypatch.setattr(vllm_cache, "shipped_dir", lambda: shipped)
    path = _ship(tree, shipped, _derived(tree, base=False))  # what a stale file could say
    if doubt == "another file":
        (tree / "vllm/v1/attention/backend.py").write_text("class AttentionImplBase:\n    pass\n")
    elif doubt == "corrupt":
        path.write_bytes(path.read_bytes()[:40])
    else:
        vllm_cache._own_fingerprint.cache_clear()
        monkeypatch.setattr(vllm_cache, "_own_fingerprint", lambda: "edited")
    derive = Counting(tree)
    assert _cached(tree, derive) == _derived(tree) and derive.runs == 1


def test_a_file_owned_by_another_user_is_not_read(tree: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    derive = Counting(tree)
    _cached(tree, derive)
    monkeypatch.setattr(os, "getuid", lambda: os.stat(_files()[0]).st_uid + 1)
    assert _cached(tree, derive) == _derived(tree) and derive.runs == 2


def test_an_unwritable_cache_folder_costs_only_the_derivation(tree: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    blocker = tree.parent / "xdg-file"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    derive = Counting(tree)
    assert _cached(tree, derive) == _derived(tree)
    assert _cached(tree, derive) == _derived(tree)
    assert derive.runs == 2


def test_a_derivation_that_does_not_read_back_equal_is_not_stored(tree: Path) -> None:
    derive = Counting(tree, base=(1, 2))  # a tuple in an untyped field reads back as a list
    assert _cached(tree, derive).members["FLASH_ATTN"].attrs["lse_base_on_e"].value == (1, 2)
    assert not _files()
    _cached(tree, derive)
    assert derive.runs == 2


def test_ranks_writing_at_once_leave_one_whole_file(tree: Path) -> None:
    """Eight writers race on one key while a reader reads: every read is the mapping or a miss,
    never a half-written file, and one file is left."""
    key, _ = vllm_cache.key_for(tree, "0.32.0", SCOPE)
    path = vllm_cache.cache_dir() / f"vllm-0.32.0-{key[:32]}.json"
    from pydantic import TypeAdapter

    adapter = TypeAdapter(Derived)
    start = threading.Barrier(9)
    seen: list[object] = []
    writing = list(range(8))

    def write() -> None:
        start.wait()
        for _ in range(20):
            vllm_cache._store(path, key, _derived(tree), adapter)
        writing.pop()

    def read() -> None:
        start.wait()
        while writing:
            seen.append(vllm_cache._load(path, key, tree, "0.32.0", adapter))
        seen.append(vllm_cache._load(path, key, tree, "0.32.0", adapter))

    threads = [threading.Thread(target=write) for _ in range(8)] + [threading.Thread(target=read)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(s is None or s == _derived(tree) for s in seen)
    assert any(s is not None for s in seen)
    assert _files() == [path] and not list(path.parent.glob(".*"))


class _Logged:
    """Sets an event when the cache logs a message containing ``text``."""

    def __init__(self, text: str) -> None:
        import logging

        self.event = threading.Event()
        outer = self

        class Handler(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                if text in record.getMessage():
                    outer.event.set()

        self.handler = Handler(logging.DEBUG)


def test_ranks_starting_cold_at_once_derive_once(tree: Path) -> None:
    """While one rank derives, another starting cold waits for it (in that order: it is seen
    waiting before the first one finishes) and reads what the first stored: one derivation."""
    deriving, go = threading.Event(), threading.Event()
    runs: list[str] = []

    def slow() -> Derived:
        runs.append("derived")
        deriving.set()
        go.wait()
        return _derived(tree)

    waiting = _Logged("waiting for the rank deriving")
    logger = vllm_cache.log
    logger.addHandler(waiting.handler)
    old_level = logger.level
    logger.setLevel("DEBUG")
    results: list[object] = []
    try:
        first = threading.Thread(target=lambda: results.append(
            vllm_cache.cached(tree, "0.32.0", SCOPE, slow, Derived)))
        first.start()
        assert deriving.wait(60)
        second = threading.Thread(target=lambda: results.append(
            vllm_cache.cached(tree, "0.32.0", SCOPE, slow, Derived)))
        second.start()
        assert waiting.event.wait(60), "the second rank never waited for the first"
        assert runs == ["derived"]  # it waits; it does not derive meanwhile
        go.set()
        first.join(60)
        second.join(60)
    finally:
        go.set()
        logger.removeHandler(waiting.handler)
        logger.setLevel(old_level)
    assert runs == ["derived"] and results == [_derived(tree)] * 2


def test_a_rank_never_waits_past_its_bound_for_a_stuck_deriver(tree: Path) -> None:
    """A deriver that holds the lock and never finishes: the next rank gives up waiting at the
    bound and derives itself (without the lock)."""
    import fcntl

    path = vllm_cache.cache_dir() / "vllm-0.32.0-stuck.json"
    path.parent.mkdir(parents=True)
    held = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        with vllm_cache.one_deriver(path, wait_s=0.0) as waited:
            assert waited is False  # not "another rank stored it": derive
    finally:
        os.close(held)
    with vllm_cache.one_deriver(path) as waited:  # the lock free again: taken at once
        assert waited is False
