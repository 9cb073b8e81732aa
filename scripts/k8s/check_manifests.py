"""Validates Kubernetes manifests against the official Python client's models (kubernetes on PyPI, generated from
the Kubernetes API's OpenAPI; pydantic models that refuse unknown fields, wrong types and missing required ones).

    python check_manifests.py FILE...

Every document must be of a kind listed in KINDS and of its apiVersion; the exit status is 1 when any is not
valid, and each finding names the file, the document and the field. No cluster is needed.
"""

import sys

import yaml
from kubernetes import client

# kind -> (apiVersion, model): the kinds agentrt's manifest and the NATS chart's rendering use.
KINDS = {
    "ConfigMap": ("v1", client.V1ConfigMap),
    "Secret": ("v1", client.V1Secret),
    "Service": ("v1", client.V1Service),
    "Deployment": ("apps/v1", client.V1Deployment),
    "StatefulSet": ("apps/v1", client.V1StatefulSet),
    "PodDisruptionBudget": ("policy/v1", client.V1PodDisruptionBudget),
    "Pod": ("v1", client.V1Pod),  # the NATS chart's `helm test` pod
}


def check(path):
    """Returns the findings for one file, and how many documents it held."""
    findings = []
    with open(path, encoding="utf-8") as f:
        try:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        except yaml.YAMLError as e:
            return [f"{path}: not YAML: {e}"], 0
    for i, doc in enumerate(docs, 1):
        where = f"{path}: document {i}"
        if not isinstance(doc, dict):
            findings.append(f"{where}: not a mapping")
            continue
        kind = doc.get("kind")
        name = (doc.get("metadata") or {}).get("name")
        where += f" ({kind} {name})"
        if kind not in KINDS:
            findings.append(f"{where}: kind {kind!r} is not one this check knows ({', '.join(KINDS)})")
            continue
        api, model = KINDS[kind]
        if doc.get("apiVersion") != api:
            findings.append(f"{where}: apiVersion {doc.get('apiVersion')!r}, want {api!r}")
        if not name:
            findings.append(f"{where}: no metadata.name")
        try:
            model.model_validate(doc)
        except Exception as e:  # pydantic's ValidationError lists every bad field
            findings.append(f"{where}: {e}")
    return findings, len(docs)


def main(paths):
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    bad = 0
    for p in paths:
        findings, n = check(p)
        for line in findings:
            print(line, file=sys.stderr)
        bad += len(findings)
        if not findings:
            print(f"{p}: {n} documents valid")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
