#!/usr/bin/env bash
# Validates deploy/k8s/agentrt.yaml, and what the NATS Helm chart renders from deploy/k8s/nats-values.yaml
# (deploy/testdata/nats-chart-*-rendered.yaml), against the Kubernetes API's schema (the official Python client's
# models, scripts/k8s/check_manifests.py; no cluster needed), then shows the check refuses what it must: copies of the
# manifest with an unknown field, a wrong type and a missing required field each fail. (deploy/k8s_test.go, in
# `go test`, checks the same files against agentrt's config loader and the NATS Helm values.)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${AGENTRT_K8S_PYTHON:-${AGENTRT_CACHE:-$HOME/.cache/agentrt}/venv-k8s/bin/python}
[[ -x "$py" ]] || { echo "k8s-manifests: $py is missing: run scripts/setup.d/92-k8s-client.sh (make setup)" >&2; exit 1; }
check="$root/scripts/k8s/check_manifests.py"
manifest="$root/deploy/k8s/agentrt.yaml"
"$py" "$check" "$manifest" "$root"/deploy/testdata/nats-chart-*-rendered.yaml

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
# refuses NAME OLD NEW WANT: the manifest with OLD (which must occur) replaced by NEW must fail, naming WANT.
refuses() {
  local name=$1 old=$2 new=$3 want=$4 f="$tmp/$1.yaml"
  grep -qF -- "$old" "$manifest" || { echo "FAIL $name: the manifest no longer holds '$old': update this case"; fail=$((fail + 1)); return; }
  OLD=$old NEW=$new "$py" -c 'import os,sys; s=open(sys.argv[1]).read(); open(sys.argv[2],"w").write(s.replace(os.environ["OLD"], os.environ["NEW"], 1))' "$manifest" "$f"
  if out=$("$py" "$check" "$f" 2>&1); then
    echo "FAIL $name: the check accepted it"; fail=$((fail + 1))
  elif ! grep -qF -- "$want" <<<"$out"; then
    echo "FAIL $name: refused, but without naming '$want':"; echo "$out"; fail=$((fail + 1))
  else
    echo "ok   $name refused"; pass=$((pass + 1))
  fi
}
refuses unknown-field "          readinessProbe:" "          readinesProbe:" "containers.0.readinesProbe"
refuses nested-unknown-field "              path: /readyz" "              paht: /readyz" "readinessProbe.httpGet.paht"
refuses wrong-type "              containerPort: 8080" "              containerPort: http-port" "ports.0.containerPort"
refuses missing-required "        - name: agentrt
          image:" "        - image:" "containers.0.name"
refuses wrong-api-version "apiVersion: apps/v1" "apiVersion: apps/v1beta1" "apiVersion"
echo "k8s-manifests: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
