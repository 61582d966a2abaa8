# `make demo` and `make test` do their own set-up: a .venv with the package installed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
OUT    := out

.PHONY: demo test lint bench samples clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $(STAMP)

samples: $(STAMP)
	$(BIN)/python -m ale_cli.sample sample_data

demo: samples
	@mkdir -p $(OUT)
	$(BIN)/ale compute --config configs/diabetes-mlp.yaml
	$(BIN)/ale compute --config configs/diabetes-hgb.yaml
	$(BIN)/ale classic --config configs/diabetes-hgb.yaml
	$(BIN)/ale plot --config configs/diabetes-hgb.yaml > /dev/null
	$(BIN)/ale rhale --config configs/diabetes-mlp.yaml
	$(BIN)/ale rebin --config configs/diabetes-mlp.yaml
	$(BIN)/ale plot --config configs/diabetes-mlp.yaml > /dev/null
	$(BIN)/ale interact --config configs/diabetes-mlp.yaml
	$(BIN)/ale plot $(OUT)/diabetes-mlp-interact.json --store $(OUT)/diabetes-mlp.npz -o $(OUT)/plots/diabetes-mlp-interact > /dev/null
	$(BIN)/ale compute --config configs/rhale-paper.yaml
	$(BIN)/ale rhale --config configs/rhale-paper.yaml
	$(BIN)/ale plot --config configs/rhale-paper.yaml > /dev/null
	@echo "demo: figures in $(OUT)/plots/diabetes-mlp/, $(OUT)/plots/diabetes-hgb-classic/ and $(OUT)/plots/rhale-paper/ (overview.png first), the s1 x s2 interaction in $(OUT)/plots/diabetes-mlp-interact/; summaries and stores in $(OUT)/"

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check ale_cli tests bench
	$(BIN)/ruff format --check ale_cli tests bench
	$(BIN)/mypy ale_cli/core

bench: samples
	$(BIN)/python bench/run.py

clean:
	rm -rf $(OUT) .pytest_cache .mypy_cache .ruff_cache .hypothesis sample_data/models bench/results
	find . -name __pycache__ -not -path './$(VENV)/*' -prune -exec rm -rf {} +
