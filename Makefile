# agentrt's build. The two commands a newcomer needs:
#   make serve   set up, build, and start `agentrt serve runtime.toml` (built-in SGLang emulator by default)
#   make test    set up and run the whole test suite (what CI runs)
# Setup installs from the package registries into $AGENTRT_CACHE (default ~/.cache/agentrt), never into the repo.

SHELL := /bin/bash
export AGENTRT_CACHE ?= $(HOME)/.cache/agentrt
ENV := source $(AGENTRT_CACHE)/env.sh

.PHONY: setup build wheel serve test test-go test-extra test-stress fuzz wasm wasm-check bench golden viewer-screenshot plugin

setup:
	@bash scripts/setup.sh

build: setup
	@$(ENV) && go build -o bin/agentrt ./cmd/agentrt

serve: build
	./bin/agentrt serve runtime.toml

# wheel builds dist/agentrt-VERSION-py3-none-manylinux_2_17_x86_64.whl: the agentrt binary, linked statically, and
# the Python client (pip install dist/agentrt-*.whl gives the agentrt command and import agentrt_client).
wheel: setup
	@$(ENV) && bash scripts/wheel.sh

# wasm rebuilds the committed Wasm modules (built-in parsers, hooks, tools, SDK examples) from their sources.
wasm: setup
	@$(ENV) && bash scripts/build-wasm.sh

# plugin builds one plugin with its SDK and the set-up toolchains: make plugin DIR=path/to/plugin [OUT=x.wasm]
# [SDK=c|rust|assemblyscript|go] (scripts/plugin.sh says how the SDK is found). Needs `make setup` done once.
plugin:
	@[ -f "$(AGENTRT_CACHE)/env.sh" ] || { echo "make plugin: run 'make setup' first (it installs the SDK toolchains)" >&2; exit 1; }
	@$(ENV) && SDK="$(SDK)" bash scripts/plugin.sh "$(DIR)" "$(OUT)"

# wasm-check proves the committed Wasm modules are exactly what their sources build.
wasm-check: wasm
	@git diff --exit-code --stat -- '*.wasm' || { echo "committed .wasm files differ from their sources: run 'make wasm' and commit" >&2; exit 1; }

test-go: setup
	@$(ENV) && gofmt_out=$$(gofmt -l $$(git ls-files '*.go')) && { [ -z "$$gofmt_out" ] || { echo "gofmt needed:"; echo "$$gofmt_out"; exit 1; }; }
	@$(ENV) && go vet ./...
	@$(ENV) && go test -race -count=1 -timeout 60m ./...

# test-extra runs the suites that are not Go: each scripts/test.d/*.sh (SDK examples, Python client, bench smoke).
test-extra: build
	@$(ENV) && for t in scripts/test.d/*.sh; do [ -e "$$t" ] || continue; echo "== $$t"; bash "$$t" || exit 1; done

test: wasm-check test-go test-extra

# test-stress runs the Go suites with -race -count=5 while one busy loop per core loads the machine: the suite
# must pass 5/5 (deterministic under load). STRESS_PKGS narrows it (default ./...); STRESS_COUNT, STRESS_HOGS.
test-stress: setup
	@$(ENV) && bash scripts/stress.sh

# fuzz runs every Go fuzz target for FUZZTIME each (default 10s); FUZZ_MATCH picks some ("parsers|tito"). A failing
# input lands in <package>/testdata/fuzz/ and becomes a regression test once committed.
FUZZTIME ?= 10s
fuzz: setup
	@$(ENV) && FUZZTIME=$(FUZZTIME) bash scripts/fuzz.sh

bench: build
	@$(ENV) && go test -run '^$$' -bench . -benchmem ./...

# viewer-screenshot rewrites docs/img/viewer.png: the browser test's view of a trajectory (agentrt serve, emulator).
viewer-screenshot: setup
	@$(ENV) && AGENTRT_VIEWER_SCREENSHOT=$(CURDIR)/docs/img/viewer.png go test -count=1 -run '^TestViewerInBrowser$$' ./cmd/agentrt

# golden regenerates the golden test data from the real Hugging Face libraries (transformers, tokenizers, jinja2).
golden: setup
	@$(ENV) && "$$AGENTRT_GOLDEN_PYTHON" scripts/golden/tokenizer_golden.py && "$$AGENTRT_GOLDEN_PYTHON" scripts/golden/template_golden.py && "$$AGENTRT_GOLDEN_PYTHON" scripts/golden/families_golden.py && "$$AGENTRT_GOLDEN_PYTHON" scripts/golden/snippets_golden.py && "$$AGENTRT_GOLDEN_PYTHON" scripts/golden/sglang_templates_golden.py
