# Fresh clone: `make run` (demo) and `make test` (whole suite) are all you need.
VENV   ?= .venv
PYTHON ?= python3
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: run test lint bench goldens proto gateway-api-crds mutate clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

## run: the standalone demo: `coxswain serve` on examples/ with a sample backend; prints curl lines.
## Ctrl-C, or SIGTERM to make (make passes it on), stops the demo and all it started.
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

## bench: every benchmark, full runs (about 15 minutes; bench/README.md); figures go in
## docs/benchmarks.md
bench: $(STAMP)
	$(PY) bench/compile_ingress.py
	$(PY) bench/compile_gateway.py
	$(PY) bench/compile_scopes.py
	$(PY) bench/compile_incremental.py
	$(PY) bench/compile_offline.py
	$(PY) bench/proxy.py full
	$(PY) bench/proxy.py parts
	$(PY) bench/proxy.py instructions
	$(PY) bench/proxy.py cpu --build both
	$(PY) bench/proxy.py h2
	$(PY) bench/proxy.py grpc
	$(PY) bench/streams.py
	$(PY) bench/tls_stacks.py
	$(PY) bench/proxy_resubscribe.py
	$(PY) bench/discovery.py
	$(PY) bench/controller.py
	$(PY) bench/controller_scale.py

## gateway-api-crds: replace the Gateway API CRDs the chart ships (both channels, with upstream's
## LICENSE) by those of tag GATEWAY_API_VERSION in GATEWAY_API_SRC, a clone (or the git directory)
## of github.com/kubernetes-sigs/gateway-api; then review `git diff` and run the chart and golden tests
GATEWAY_API_CRDS ?= helm/coxswain/charts/gateway-api-crds
gateway-api-crds:
	@test -n "$(GATEWAY_API_VERSION)" && test -n "$(GATEWAY_API_SRC)" || { echo "usage: make gateway-api-crds GATEWAY_API_VERSION=vX.Y.Z GATEWAY_API_SRC=<clone of github.com/kubernetes-sigs/gateway-api>" >&2; exit 2; }
	@set -eu; src='$(GATEWAY_API_SRC)'; tag='$(GATEWAY_API_VERSION)'; out='$(GATEWAY_API_CRDS)'; \
	commit=$$(git -C "$$src" rev-parse --verify --quiet "refs/tags/$$tag^{commit}") \
	  || { echo "$$src has no tag $$tag" >&2; exit 1; }; \
	rm -rf "$$out/standard" "$$out/experimental" "$$out/git-blobs.txt"; \
	for channel in standard experimental; do \
	  mkdir "$$out/$$channel"; \
	  git -C "$$src" ls-tree "$$commit" "config/crd/$$channel/" > "$$out/ls-tree.tmp"; \
	  while read -r mode type blob path; do \
	    case "$${path##*/}" in gateway*.yaml) ;; *) continue ;; esac; \
	    git -C "$$src" cat-file blob "$$blob" > "$$out/$$channel/$${path##*/}"; \
	    echo "$$blob $$channel/$${path##*/}" >> "$$out/git-blobs.txt"; \
	  done < "$$out/ls-tree.tmp"; \
	  rm "$$out/ls-tree.tmp"; \
	  ls "$$out/$$channel"/*.yaml > /dev/null; \
	done; \
	git -C "$$src" show "$$commit:LICENSE" > "$$out/LICENSE"; \
	sed -e "s|^version: .*|version: $${tag#v}|" -e "s|^appVersion: .*|appVersion: $$tag|" \
	  -e "s|^\(  coxswain-labs.dev/source-commit:\).*|\1 $$commit|" "$$out/Chart.yaml" > "$$out/Chart.yaml.new"; \
	mv "$$out/Chart.yaml.new" "$$out/Chart.yaml"; \
	echo "Gateway API $$tag ($$commit) written to $$out"

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis mutants build/mutate
