"""The vLLM mapping derived from an install's sources, cached per install on disk.

Deriving the mapping (:func:`attn_contracts.integrations.vllm_source.derive`) builds the lint's
program model of vLLM's attention code: seconds of CPU per rank. Its result depends only on the
files it reads and on this project's own code and data, so it is cached in the user's cache
directory (``$XDG_CACHE_HOME/attn-contracts/vllm-mapping``, else ``~/.cache/...``), one JSON file
per key. The key is a SHA-256 over what the derivation reads:

- the cache's schema, and this project's own fingerprint (its version and the hash of every
  ``.py`` and ``.toml`` file of the package and its catalog: new rules or records, a new key);
- the vLLM release and the scope read;
- the hash of every ``.py`` file in the scope, and the ``vllm*.dist-info`` metadata (its pins
  choose the releases the lint reads the tree at).

The tree's folder is not in the key: the stored mapping names it by a token, put back on reading
(the same release installed in two places is one entry). Nor are the other distributions
installed beside it: the derivation reads the built-in catalog only, never a plugin's records.

**Shipped mappings.** The package carries the mappings of the vLLM releases it was checked on
(``backends/catalog/engines/vllm-mappings/``, written by ``tools/ship_vllm_mappings.py`` from the
released wheels), stored under the same key. A start whose install matches one (the same files,
metadata, release, and this same project) reads it instead of deriving: a first start costs what
a warm one does. Anything else (a patched or unreleased vLLM, an edited attn-contracts) has
another key and is derived, as before; a shipped file goes through the same checks as a cached
one, but for its owner (it is part of the installed package).

A cache never changes a verdict: the file must hold the key just computed and the digest of its
content, be owned by this user and parse into the mapping's types; on any doubt (absent,
corrupt, foreign, another key, unreadable) the mapping is derived again and the file rewritten.
A derivation is stored only if it reads back equal to itself. Writes go to a temporary file in
the same folder, then ``os.replace``: ranks writing at once each leave a whole file (the same
content). A cache folder that cannot be written costs only the time to derive.

One deriver per key: the ranks of a host that start cold at once (eight with DCP=8) would each
spend the same seconds of CPU on the same mapping. The first takes an advisory lock on the key
(``flock`` on ``<file>.lock``: the kernel lets it go when the process ends, so a dead deriver
never blocks anyone); the others wait for it, then read what it stored. A waiter never waits past
:data:`WAIT_S` (a deriver that hangs: it derives itself), nor where locks are not to be had (no
``fcntl``, a read-only folder): at worst each rank derives, as without the lock.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from typing import TypeVar

from attn_contracts.integrations.vllm_mode import log

_D = TypeVar("_D")

__all__ = ["SCHEMA", "WAIT_S", "cache_dir", "cached", "file_name", "key_for", "one_deriver",
           "shipped_dir", "stored_text"]

#: bumped when the file's layout changes (the derived types are part of the own fingerprint)
SCHEMA = 2
#: how long a rank waits for another one deriving the same mapping before deriving it itself
#: (a cold derivation takes seconds; tens on a loaded machine)
WAIT_S = 120.0
_POLL_S = 0.05
_FOLDER = "vllm-mapping"
#: what stands for the tree's folder in a stored mapping (a control character: never in a path
#: the derivation writes; a mapping that holds it anyway is not stored)
_ROOT_TOKEN = json.dumps("\x01vllm-root\x01")[1:-1]


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/attn-contracts/vllm-mapping`` (else ``~/.cache/attn-contracts/...``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "attn-contracts" / _FOLDER


def shipped_dir() -> Path:
    """The mappings the package ships for the vLLM releases it was checked on."""
    import importlib.util

    spec = importlib.util.find_spec("attn_contracts.backends")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    base = Path(folders[0]) if folders else Path(__file__).parent
    return base / "catalog" / "engines" / "vllm-mappings"


def file_name(version: str | None, key: str) -> str:
    """The name of the stored mapping of ``key`` (shipped ones add ``.gz``)."""
    return f"vllm-{version or 'unknown'}-{key[:32]}.json"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _files(folder: Path, suffixes: tuple[str, ...]) -> Iterator[Path]:
    for top, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(names):
            if name.endswith(suffixes):
                yield Path(top) / name


@functools.cache
def _own_fingerprint() -> str:
    """This project's version and the hash of its code and data (the rules, the records, the
    engine data): what the derivation does with the files it reads. Once per process."""
    import importlib.util

    import attn_contracts

    folders = [Path(attn_contracts.__file__).parent]
    spec = importlib.util.find_spec("attn_contracts.backends")  # the catalog (a mapped folder)
    if spec is not None:
        folders += [Path(p) for p in spec.submodule_search_locations or []]
    h = hashlib.sha256(str(getattr(attn_contracts, "__version__", "?")).encode())
    for folder in dict.fromkeys(f.resolve() for f in folders):
        for f in _files(folder, (".py", ".toml")):
            h.update(f"{f.relative_to(folder)}\0{_digest(f)}\n".encode())
    return h.hexdigest()


def key_for(root: Path, version: str | None, scope: tuple[str, ...] | None
            ) -> tuple[str, dict[str, Any]]:
    """The key of the mapping of the tree at ``root`` (the folder holding ``vllm``), and what it
    is made of. Reads (and hashes) every file the derivation reads; ``root`` itself is not part
    of it (a stored mapping names its tree by a token)."""
    folders = [root / p for p in scope if (root / p).is_dir()] if scope else [root / "vllm"]
    files = {str(f.relative_to(root)): _digest(f)
             for folder in folders for f in _files(folder, (".py",))}
    meta = {}
    for info in sorted(root.glob("vllm*.dist-info")):
        for name in ("METADATA", "top_level.txt"):
            if (info / name).is_file():
                meta[f"{info.name}/{name}"] = _digest(info / name)
    inputs = {
        "schema": SCHEMA, "own": _own_fingerprint(), "version": version,
        "scope": list(scope) if scope else None, "files": files, "vllm_dist_info": meta,
    }
    text = json.dumps(inputs, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest(), inputs


def cached(root: Path, version: str | None, scope: tuple[str, ...] | None,
           derive: Callable[[], _D], kind: type[_D]) -> _D:
    """The mapping of ``root`` from the cache where its key holds, else ``derive()`` (stored);
    ``kind``: the derived mapping's type, which reads the stored JSON back (handed in by the
    deriving module, so this one never imports it)."""
    from pydantic import TypeAdapter

    adapter = TypeAdapter(kind)
    try:
        key, _ = key_for(root, version, scope)
    except OSError as err:  # a file vanished meanwhile: derive, store nothing
        log.debug("attn-contracts: the vLLM mapping is not cached (%s)", err)
        return derive()
    path = cache_dir() / file_name(version, key)
    found: _D | None = _load(path, key, root, version, adapter)
    if found is not None:
        log.debug("attn-contracts: the vLLM mapping from the cache (%s)", path)
        return found
    shipped = shipped_dir() / (file_name(version, key) + ".gz")
    found = _load(shipped, key, root, version, adapter)
    if found is not None:
        log.debug("attn-contracts: the vLLM mapping shipped for this release (%s)", shipped)
        return found
    with one_deriver(path) as waited:
        if waited:  # another rank derived it meanwhile: what it stored (checked as any file)
            found = _load(path, key, root, version, adapter)
            if found is not None:
                log.debug("attn-contracts: the vLLM mapping another rank derived (%s)", path)
                return found
        derived = derive()
        _store(path, key, derived, adapter)
    return derived


@contextlib.contextmanager
def one_deriver(path: Path, wait_s: float | None = None) -> Iterator[bool]:
    """Held while this process derives the mapping stored at ``path``: an exclusive advisory
    lock on ``<path>.lock``. Yields whether it had to wait for another holder (which then
    stored it, or died: read the file again before deriving). Without a lock to be had it
    yields False at once; past ``wait_s`` (default :data:`WAIT_S`), False without the lock."""
    try:
        import fcntl
    except ImportError:  # no advisory locks here: every rank derives
        yield False
        return
    deadline = time.monotonic() + (WAIT_S if wait_s is None else wait_s)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as err:
        log.debug("attn-contracts: no lock for the vLLM mapping at %s (%s)", path, err)
        yield False
        return
    waited = False
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:  # another process holds it
                if not waited:
                    log.debug("attn-contracts: waiting for the rank deriving %s", path)
                    waited = True
                if time.monotonic() >= deadline:
                    log.debug("attn-contracts: gave up waiting for %s; deriving here", path)
                    waited = False
                    break
                time.sleep(_POLL_S)
            except OSError as err:  # no locks on this file system: derive here
                log.debug("attn-contracts: no lock for the vLLM mapping at %s (%s)", path, err)
                break
        yield waited
    finally:
        os.close(fd)  # closing it lets the lock go


def _content_digest(text: str) -> str:
    """The hash of the stored mapping (a file changed after it was written is not read)."""
    return hashlib.sha256(text.encode()).hexdigest()


def _read(path: Path) -> str:
    """A stored mapping's text: a gzip file where the package ships it, else the user's own
    file (never one another user could have written)."""
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return f.read()
    if hasattr(os, "getuid") and path.stat().st_uid != os.getuid():
        raise ValueError(f"owned by uid {path.stat().st_uid}, not this user's")
    return path.read_text(encoding="utf-8")


def _load(path: Path, key: str, root: Path, version: str | None, adapter: Any) -> Any:
    """The stored mapping at ``path`` if every check holds, else None (the reason at DEBUG)."""
    try:
        if not path.is_file():
            return None
        doc = json.loads(_read(path))
        if not isinstance(doc, dict) or doc.get("key") != key:
            raise ValueError("another key")
        text = doc.get("derived")
        if not isinstance(text, str) or doc.get("digest") != _content_digest(text):
            raise ValueError("its content does not match its digest")
        here = json.dumps(str(root))[1:-1]
        derived = adapter.validate_python(json.loads(text.replace(_ROOT_TOKEN, here)))
        if derived.root != root or derived.version != version:
            raise ValueError(f"for {derived.root} at {derived.version}")
        return derived
    except Exception as err:  # corrupt, foreign, unreadable: derive again (and rewrite it)
        log.debug("attn-contracts: the stored vLLM mapping %s is not used (%s: %s)", path,
                  type(err).__name__, err)
        return None


def stored_text(key: str, derived: Any, adapter: Any) -> str | None:
    """The file that stores ``derived`` under ``key`` (its tree's folder as a token), or None
    where it would not read back equal to itself."""
    data = adapter.dump_python(derived, mode="json")
    if adapter.validate_python(data) != derived:
        log.debug("attn-contracts: the vLLM mapping does not read back equal; not cached")
        return None
    text = json.dumps(data, sort_keys=True)
    if _ROOT_TOKEN in text:
        log.debug("attn-contracts: the vLLM mapping holds the folder token; not cached")
        return None
    text = text.replace(json.dumps(str(derived.root))[1:-1], _ROOT_TOKEN)
    return json.dumps({"schema": SCHEMA, "key": key, "digest": _content_digest(text),
                       "derived": text})


def _store(path: Path, key: str, derived: Any, adapter: Any) -> None:
    """Write the mapping under ``key``, atomically; only one that reads back equal to itself."""
    try:
        text = stored_text(key, derived, adapter)
        if text is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except Exception as err:  # a read-only or full disk: this start derived, the next will too
        log.debug("attn-contracts: the vLLM mapping could not be cached at %s "
                  "(%s: %s)", path, type(err).__name__, err)
