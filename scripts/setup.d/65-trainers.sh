#!/usr/bin/env bash
# The trainers whose real code the adapter tests drive (scripts/test.d/55-trainers.sh): verl 0.9.1 and TorchRL 0.14.1
# with tensordict, each in its own venv (their tensordict bounds exclude each other), sharing one torch 2.15.0 install
# ($AGENTRT_CACHE/torch-2.15.0, put on each venv's path by a .pth file). Every wheel is hash-pinned and installed with
# --no-deps, so nothing but the pinned files is pulled; see scripts/trainers/requirements-torch.txt for why torch's
# nvidia runtime wheels are among them.
set -euo pipefail
dir="$AGENTRT_ROOT/scripts/trainers"
py=$(command -v python3.11 || command -v python3)
pipi() { "$1" -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes "${@:2}"; }

torch="$AGENTRT_CACHE/torch-2.15.0"
sum=$(sha256sum "$dir/requirements-torch.txt" | cut -d' ' -f1)
if [[ ! -f "$torch/.req" || "$(cat "$torch/.req")" != "$sum" ]]; then
  rm -rf "$torch"
  pipi "$py" --only-binary=:all: --target "$torch" -r "$dir/requirements-torch.txt"
  echo "$sum" > "$torch/.req"
fi

for name in verl torchrl; do
  venv="$AGENTRT_CACHE/venv-$name"
  req="$dir/requirements-$name.txt"
  sum=$(cat "$req" "$dir/requirements-torch.txt" | sha256sum | cut -d' ' -f1)
  [[ -f "$venv/.req" && "$(cat "$venv/.req")" == "$sum" ]] && continue
  rm -rf "$venv" && "$py" -m venv "$venv"
  echo "$torch" > "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/agentrt-torch.pth"
  # antlr4-python3-runtime (omegaconf's) is published as a source archive only: built, still hash-checked.
  pipi "$venv/bin/python" --only-binary=:all: --no-binary=antlr4-python3-runtime -r "$req"
  "$venv/bin/python" -c 'import torch; assert not torch.cuda.is_available()'
  echo "$sum" > "$venv/.req"
done
