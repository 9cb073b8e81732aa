#!/usr/bin/env bash
# Prints (with --print) the environment agentrt's build and tests need, as shell exports.
set -euo pipefail
cache=${AGENTRT_CACHE:-$HOME/.cache/agentrt}
cat <<EOT
export AGENTRT_CACHE="$cache"
export CGO_ENABLED=1
export CGO_LDFLAGS="-L$cache/lib"
export AGENTRT_QWEN3_MODEL="$cache/models/qwen3"
export AGENTRT_QWEN25_MODEL="$cache/models/qwen2.5"
export AGENTRT_LLAMA31_MODEL="$cache/models/llama3.1"
export AGENTRT_DEEPSEEK_V3_MODEL="$cache/models/deepseek-v3"
export AGENTRT_GEMMA3_MODEL="$cache/models/gemma3"
export AGENTRT_GPTOSS_MODEL="$cache/models/gpt-oss"
export AGENTRT_MISTRAL_NEMO_MODEL="$cache/models/mistral-nemo"
export AGENTRT_GOLDEN_PYTHON="$cache/venv-golden/bin/python"
export AGENTRT_SGLANG_PYTHON="$cache/venv-sglang/bin/python"
export AGENTRT_MCP_PYTHON="$cache/venv-mcp/bin/python"
export AGENTRT_SMG="$cache/venv-smg/bin/smg"
export AGENTRT_SGLANG_ROUTER="$cache/venv-sglang-router/bin/sglang-router"
export AGENTRT_SDK_PYTHON="$cache/venv-sdks/bin/python"
export AGENTRT_HF_PYTHON="$cache/venv-hf/bin/python"
export AGENTRT_K8S_PYTHON="$cache/venv-k8s/bin/python"
export AGENTRT_PYTHON_WASM="$cache/python-wasi-3.12.0/package/dist/python.wasm"
# The plugin SDKs' toolchains (AGENTRT_WASM_CLANG, _SYSROOT, _RUSTC, _ASC: scripts/setup.d/40-wasm-toolchains.sh).
if [ -f "$cache/wasm-toolchains.env" ]; then . "$cache/wasm-toolchains.env"; fi
EOT
