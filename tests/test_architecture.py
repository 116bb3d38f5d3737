"""The layering written as import-linter contracts in pyproject.toml is what the tree does, and the
check really fails when a rule is broken (a seam's exception removed, a forbidden import added)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter not installed")


def _contracts() -> list[dict]:  # type: ignore[type-arg]
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return list(config["tool"]["importlinter"]["contracts"])


def test_the_torch_free_rule_names_every_contract_module() -> None:
    """A new module of the contract package is covered by the rule, or the rule says why not."""
    listed = set(_contracts()[0]["source_modules"])
    core = ROOT / "attn_contracts"
    for path in core.rglob("*.py"):
        parts = path.relative_to(core).with_suffix("").parts
        if parts[0] in ("cli", "testing"):
            continue  # the composition root; the test harness (torch, for tests and the demo)
        module = ".".join(("attn_contracts", *parts)).removesuffix(".__init__")
        parent = module.rsplit(".", 1)[0]
        assert module in listed or f"{parent}.*" in listed, f"{module} is not in the contract"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A built, non-editable copy of the package (where backends/ and combine/ are installed)."""
    target = tmp_path_factory.mktemp("site")
    build = tmp_path_factory.mktemp("src")
    for item in ("attn_contracts", "backends", "combine", "pyproject.toml", "README.md"):
        src = ROOT / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, build / item)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--no-build-isolation", "--no-compile", "--target", str(target), str(build)],
                   check=True, capture_output=True)
    return target


def _lint_imports(site: Path, config: str) -> subprocess.CompletedProcess[str]:
    cfg = site / "contracts.toml"
    cfg.write_text(config)
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", str(cfg)], cwd=site,
                          capture_output=True, text=True, env={"PYTHONPATH": str(site)})


def test_the_tree_keeps_every_contract(site: Path) -> None:
    result = _lint_imports(site, (ROOT / "pyproject.toml").read_text())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 kept, 0 broken" in result.stdout


def test_removing_a_seams_exception_breaks_the_check(site: Path) -> None:
    config = (ROOT / "pyproject.toml").read_text()
    seam = '    "attn_contracts.startup -> attn_contracts.backends.runner",\n'
    assert seam in config
    result = _lint_imports(site, config.replace(seam, ""))
    assert result.returncode == 1
    assert "attn_contracts.startup -> attn_contracts.backends.runner" in result.stdout


def test_a_forbidden_import_in_the_records_breaks_the_check(site: Path) -> None:
    records = site / "attn_contracts" / "records.py"
    original = records.read_text()
    records.write_text(original + "\nimport attn_contracts.combine  # noqa\n")
    try:
        result = _lint_imports(site, (ROOT / "pyproject.toml").read_text())
    finally:
        records.write_text(original)
    assert result.returncode == 1
    assert "attn_contracts.records -> attn_contracts.combine" in result.stdout
