# Two entry points that work on a fresh machine with nothing installed: `make demo`, `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# CPU torch from the local wheel; the extras' looser `torch>=2.6` is then already satisfied, so pip
# never fetches a multi-GB CUDA build.
TORCH ?= torch==2.13.0

.PHONY: demo test lint typecheck clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check $(TORCH)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[kernels,dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/attn-contracts list
	$(VENV)/bin/attn-contracts validate --backend flashinfer.mla.fa3 --world-size 4
	$(VENV)/bin/attn-contracts demo dcp --world-size 4 --wrong-base

test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadfile -q

# import-linter reads a built copy: the editable install maps backends/ and combine/ by a path hook
IMPORTS_SITE := $(VENV)/imports-site

lint: $(STAMP)
	$(VENV)/bin/ruff check attn_contracts backends combine tests bench examples
	$(VENV)/bin/mypy
	rm -rf $(IMPORTS_SITE) build
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation --no-compile --target $(IMPORTS_SITE) .
	rm -rf build
	cd $(IMPORTS_SITE) && PYTHONPATH=. $(CURDIR)/$(VENV)/bin/lint-imports --no-cache $(CURDIR)/pyproject.toml

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache .hypothesis
