#!/usr/bin/env bash
# pip install agentrt, as a user with only Python has it: builds the wheel (scripts/wheel.sh), holds it to PyPI's
# auditwheel (no external shared library, manylinux_2_17 tag), installs it into a fresh venv, and then, with no Go,
# Rust or cargo on PATH and a loopback Hugging Face hub standing in for huggingface.co: `agentrt init --model
# Qwen/Qwen3-8B`, `agentrt serve` on the built-in emulator (the tokenizer fetched into a fresh hub cache), the
# example trainer against it; then once more offline (HF_HUB_OFFLINE=1, the hub gone) from the warm cache.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${AGENTRT_CACHE:-$HOME/.cache/agentrt}
model=${AGENTRT_QWEN3_MODEL:-$cache/models/qwen3}
wheelhouse="$cache/wheelhouse"
[[ -d "$wheelhouse" ]] || { echo "wheel: $wheelhouse is missing; run make setup" >&2; exit 1; }
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "wheel: $*" >&2; for f in "$tmp"/*.log; do [[ -e "$f" ]] && { echo "== $f" >&2; tail -30 "$f" >&2; }; done; exit 1; }

start=$SECONDS
WHEEL_OUT="$tmp/dist" bash "$root/scripts/wheel.sh" > "$tmp/wheel.log" 2>&1 || fail "make wheel failed"
whl=$(ls "$tmp"/dist/agentrt-*-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl) || fail "no manylinux_2_17 wheel"
echo "wheel: built $(basename "$whl") ($(du -h "$whl" | cut -f1)) in $((SECONDS - start))s"
"$cache/venv-wheel/bin/auditwheel" show "$whl" > "$tmp/show.log" 2>&1 || fail "auditwheel show failed"
# auditwheel names the most compatible policy the binary meets; the tag (2_17) must be no older than that.
policy=$(tr '\n' ' ' < "$tmp/show.log" | grep -o 'following platform tag: "manylinux_2_[0-9]*_x86_64"' | grep -o '2_[0-9]*' || true)
[[ -n "$policy" && ${policy#2_} -le 17 ]] && grep -q 'requires no external shared libraries' "$tmp/show.log" ||
	fail "auditwheel show: $(cat "$tmp/show.log")"
echo "wheel: auditwheel show: consistent with manylinux_${policy}_x86_64, no external shared libraries"

# The fake hub is built with the toolchain, before it leaves PATH.
(cd "$root" && go build -o "$tmp/fakehub" ./runtime/hfhub/internal/fakehub)
mkfifo "$tmp/hub.out"
"$tmp/fakehub" "Qwen/Qwen3-8B=$model" > "$tmp/hub.out" 2> "$tmp/hub.log" &
hub=$!
pids+=("$hub")
read -r endpoint < "$tmp/hub.out" || fail "fakehub did not start"

py=$(command -v python3.11 || command -v python3)
"$py" -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install --quiet --disable-pip-version-check --no-index --find-links "$wheelhouse" "$whl"

# A user's shell: the venv and a few basic tools (this machine's /usr/bin also has Debian's rustc and gcc, for the
# Wasm guests), no toolchain; a fresh home and hub cache.
mkdir -p "$tmp/sysbin"
for tool in bash sh env cat ls uname; do ln -s "$(command -v "$tool")" "$tmp/sysbin/$tool"; done
userenv=(env -i "HOME=$tmp/home" "PATH=$tmp/venv/bin:$tmp/sysbin" "HF_ENDPOINT=$endpoint" "HF_HOME=$tmp/home/.cache/huggingface")
mkdir -p "$tmp/home" "$tmp/work"
for tool in go cargo rustc gcc cc; do
	if "${userenv[@]}" bash -c "command -v $tool" >/dev/null; then fail "$tool is on the user's PATH"; fi
done
[[ "$("${userenv[@]}" bash -c 'command -v agentrt')" == "$tmp/venv/bin/agentrt" ]] || fail "agentrt is not the venv's command"
"${userenv[@]}" python -c 'import agentrt_client, sys; print("wheel: agentrt_client", agentrt_client.__version__)'
version=$("${userenv[@]}" agentrt version) || fail "agentrt version failed"
echo "wheel: ${version%%$'\n'*}"

cd "$tmp/work"
"${userenv[@]}" agentrt init --model Qwen/Qwen3-8B runtime.toml
# The test's own spool and plugin cache, and a port of its own.
sed -i "s|~/.cache/agentrt/spool|$tmp/spool|; s|~/.cache/agentrt/wazero|$tmp/wazero|" runtime.toml
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# serve_and_train LABEL [ENV...]: starts agentrt serve, waits for the line it prints once it listens, runs the
# example trainer through it, stops serve with SIGTERM and checks it exited cleanly.
serve_and_train() {
	local label=$1 ready
	shift
	rm -f "$tmp/serve.out" && mkfifo "$tmp/serve.out"
	"${userenv[@]}" "$@" agentrt serve runtime.toml --addr "127.0.0.1:$port" > "$tmp/serve.out" 2> "$tmp/serve-$label.log" &
	local serve=$!
	pids+=("$serve")
	exec 9< "$tmp/serve.out"
	read -r ready <&9 || fail "$label: agentrt serve exited before it listened"
	echo "wheel: $label: $ready"
	"${userenv[@]}" python "$root/examples/trainer.py" --url "ws://127.0.0.1:$port/v1/stream" --count 8 -n 2 \
		> "$tmp/trainer-$label.log" 2>&1 || fail "$label: the trainer failed"
	grep -q "completed, 16 trajectories" "$tmp/trainer-$label.log" || fail "$label: trainer: $(cat "$tmp/trainer-$label.log")"
	kill -TERM "$serve"
	wait "$serve" || fail "$label: agentrt serve exited $? on SIGTERM"
	exec 9<&-
	echo "wheel: $label: $(grep "completed, 16 trajectories" "$tmp/trainer-$label.log")"
}
serve_and_train online
snapshots=("$tmp"/home/.cache/huggingface/hub/models--Qwen--Qwen3-8B/snapshots/*/tokenizer.json)
[[ -e "${snapshots[0]}" ]] || fail "the tokenizer is not in the hub cache"

kill -TERM "$hub" # the hub goes away
wait "$hub" || true
serve_and_train offline HF_HUB_OFFLINE=1
echo "wheel: ok in $((SECONDS - start))s"
