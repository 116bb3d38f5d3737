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
	$(VENV)/bin/attn-contracts validate --backend flashinfer.mla.fa3 --dcp 4
	$(VENV)/bin/attn-contracts demo dcp --world-size 4 --wrong-base

test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadfile -q

# import-linter reads a built copy: the editable install maps backends/ and combine/ by a path hook
IMPORTS_SITE := $(VENV)/imports-site

# mypy reads a link tree of the installed layout (attn_contracts/combine -> combine/, .../backends
# -> backends/), so types cross the three packages instead of becoming Any at the package-dir
# mapping that the editable install's path hook does and mypy cannot follow
TYPECHECK := $(VENV)/typecheck

typecheck: $(STAMP)
	rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)/attn_contracts
	for f in $(CURDIR)/attn_contracts/*; do ln -s "$$f" $(TYPECHECK)/attn_contracts/; done
	ln -s $(CURDIR)/combine $(TYPECHECK)/attn_contracts/combine
	ln -s $(CURDIR)/backends $(TYPECHECK)/attn_contracts/backends
	cd $(TYPECHECK) && $(CURDIR)/$(VENV)/bin/mypy --config-file $(CURDIR)/pyproject.toml

lint: $(STAMP) typecheck
	$(VENV)/bin/ruff check attn_contracts backends combine tests bench examples
	rm -rf $(IMPORTS_SITE) build
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation --no-compile --target $(IMPORTS_SITE) .
	rm -rf build
	cd $(IMPORTS_SITE) && PYTHONPATH=. $(CURDIR)/$(VENV)/bin/lint-imports --no-cache $(CURDIR)/pyproject.toml

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache .hypothesis
