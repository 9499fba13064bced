# Fresh clone: `make run` (demo) and `make test` (whole suite) are all you need.
VENV   ?= .venv
PYTHON ?= python3
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: run test lint bench goldens proto mutate clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

## run: the standalone demo: `coxswain serve` on examples/ with a sample backend; prints curl lines
run: $(STAMP)
	$(PY) examples/demo.py

## lint: ruff, mypy --strict, import-linter
lint: $(STAMP)
	$(VENV)/bin/ruff check coxswain tests bench proto examples tools setup.py build_backend
	$(VENV)/bin/ruff format --check coxswain tests bench proto examples tools setup.py build_backend
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy tools/mutate
	$(VENV)/bin/lint-imports

## test: lint, the whole suite (HYPOTHESIS_PROFILE=ci under CI), then the codec and proxy
## tests again on the codec compiled with mypyc, as the image ships it (tests/compiled.py)
test: lint
	$(PY) -m pytest
	$(PY) tests/compiled.py -q

## goldens: regenerate tests/golden expectations; review `git diff` before committing
goldens: $(STAMP)
	$(PY) -m pytest tests/golden --update-goldens

## proto: regenerate coxswain/_proto from proto/ (a test fails when the committed code is stale)
proto: $(STAMP)
	$(PY) proto/generate.py

## mutate: mutation testing of the pure packages (mutmut, [tool.mutmut] in pyproject.toml); not
## part of `make test`. Report: build/mutate/report.md; docs/quality.md. MUTANTS='glob' retests only those
MUTATE_STAMP := $(VENV)/.mutate-stamp
$(MUTATE_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,mutate]'
	touch $(MUTATE_STAMP)

mutate: $(MUTATE_STAMP)
	$(PY) tools/mutate/run.py $(MUTANTS)

## bench: benchmarks; results go in docs/benchmarks.md
bench: $(STAMP)
	$(PY) bench/compile_ingress.py
	$(PY) bench/compile_gateway.py
	$(PY) bench/compile_scopes.py
	$(PY) bench/proxy.py
	$(PY) bench/proxy_parts.py
	$(PY) bench/proxy_instructions.py
	$(PY) bench/proxy_cpu.py --build both
	$(PY) bench/discovery.py
	$(PY) bench/controller.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis mutants build/mutate
