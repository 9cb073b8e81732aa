#!/usr/bin/env bash
# Builds agentrt's wheel (`make wheel`): the agentrt binary, linked statically, plus the trainer client
# (clients/python/agentrt_client), as dist/agentrt-VERSION-py3-none-PLATFORM.whl, where PLATFORM is the manylinux
# policy PyPI's auditwheel finds the binary meets (it reads the binary's ELF: its libraries and symbol versions).
#
# The binary links two Rust static libraries through cgo (libtokenizers.a, whose C++ part needs libstdc++, and
# libagentrt_jinja.a). Linked dynamically it needs libstdc++.so and glibc 2.34 symbols (manylinux_2_34 at best);
# linked statically (glibc, libstdc++ and libgcc included; Go's own DNS resolver and user lookup, since a static
# glibc cannot load NSS modules) it needs no shared library, and auditwheel finds it consistent with every policy
# down to manylinux_2_5. What it does need is Linux 3.2 or later (Go's runtime since Go 1.24, and the static glibc:
# `file` says "for GNU/Linux 3.2.0"): manylinux_2_17 (manylinux2014, CentOS 7's 3.10) is the oldest policy whose
# systems all have that, so the wheel is tagged manylinux_2_17 rather than the 2_5 (CentOS 5, Linux 2.6.18) that
# symbol versions alone allow. Needs the set-up (libraries in $AGENTRT_CACHE/lib, the venv-wheel tools).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${AGENTRT_CACHE:-$HOME/.cache/agentrt}
venv="$cache/venv-wheel"
out=${WHEEL_OUT:-$root/dist}
[[ -x "$venv/bin/auditwheel" ]] || { echo "wheel: $venv is missing; run make setup" >&2; exit 1; }
arch=$(uname -m)
[[ "$arch" == x86_64 ]] || { echo "wheel: only x86_64 wheels are built (this machine is $arch)" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
src="$stage/src"
mkdir -p "$src" "$stage/raw" "$out"
cp "$root/clients/python/wheel/pyproject.toml" "$root/clients/python/wheel/setup.py" "$src/"
cp "$root/clients/python/README.md" "$src/README.md"
cp -r "$root/clients/python/agentrt_client" "$src/"
find "$src" -name __pycache__ -prune -exec rm -rf {} +

# -static: glibc, libstdc++ and libgcc go into the binary; netgo/osusergo keep Go from calling glibc's NSS
# (getaddrinfo, getpwnam), which a static glibc cannot load. The linker warns that Rust's std links getaddrinfo and
# getpwuid_r (std::net's lookup_host, home_dir's fallback): agentrt's Rust code (tokenizers from files, minijinja)
# calls neither. -s -w drops the symbol tables (stack traces stay).
(cd "$root" && CGO_ENABLED=1 go build -tags netgo,osusergo \
	-ldflags '-s -w -linkmode external -extldflags "-static"' -o "$src/agentrt" ./cmd/agentrt)
if ldd "$src/agentrt" >/dev/null 2>&1; then
	echo "wheel: the binary is not static:" >&2
	ldd "$src/agentrt" >&2
	exit 1
fi

"$venv/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation -w "$stage/raw" "$src"
raw=$(ls "$stage/raw"/agentrt-*.whl)
"$venv/bin/auditwheel" show "$raw"
# repair grafts nothing here (no shared library is needed): it checks the binary against the policy and retags.
rm -f "$out"/agentrt-*.whl
"$venv/bin/auditwheel" repair --plat "manylinux_2_17_$arch" --only-plat --patcher none -w "$out" "$raw"
ls "$out"/agentrt-*.whl
