"""The real huggingface_hub, driven by runtime/hfhub's tests: one JSON command on argv[1], one JSON answer on stdout.

  {"op": "env", "rows": [{VAR: value}, ...]}      what huggingface_hub reads from each environment (the process's
                                                  environment is replaced by the row and huggingface_hub.constants
                                                  re-executed, as at import)
  {"op": "validate", "ids": [...]}                validate_repo_id on each id: true/false
  {"op": "snapshot", "repo_id", "revision", "allow_patterns", "local_files_only"}
                                                  snapshot_download: the folder and the files under it
  {"op": "download", "repo_id", "revision", "filenames", "local_files_only"}
                                                  hf_hub_download of each file: its path in the cache
"""

import importlib
import json
import os
import sys

from huggingface_hub import constants, hf_hub_download, snapshot_download
from huggingface_hub.utils import HFValidationError, get_token, validate_repo_id


def files_under(folder):
    out = []
    for root, _, names in os.walk(folder):
        for n in names:
            out.append(os.path.relpath(os.path.join(root, n), folder).replace(os.sep, "/"))
    return sorted(out)


def main():
    cmd = json.loads(sys.argv[1])
    op = cmd["op"]
    if op == "env":
        ans = []
        for row in cmd["rows"]:
            os.environ.clear()
            os.environ.update(row)
            importlib.reload(constants)
            ans.append(
                {
                    "endpoint": constants.ENDPOINT,
                    "cache": constants.HF_HUB_CACHE,
                    "offline": constants.HF_HUB_OFFLINE,
                    "token": get_token() if not constants.HF_HUB_DISABLE_IMPLICIT_TOKEN else None,
                    "etag_timeout": constants.HF_HUB_ETAG_TIMEOUT,
                }
            )
    elif op == "validate":
        ans = []
        for i in cmd["ids"]:
            try:
                validate_repo_id(i)
                ans.append(True)
            except HFValidationError:
                ans.append(False)
    elif op == "snapshot":
        path = snapshot_download(
            cmd["repo_id"],
            revision=cmd.get("revision"),
            allow_patterns=cmd.get("allow_patterns"),
            local_files_only=cmd.get("local_files_only", False),
        )
        ans = {"path": path, "files": files_under(path)}
    elif op == "download":
        ans = {
            f: hf_hub_download(
                cmd["repo_id"], f, revision=cmd.get("revision"), local_files_only=cmd.get("local_files_only", False)
            )
            for f in cmd["filenames"]
        }
    else:
        raise SystemExit(f"unknown op {op}")
    json.dump(ans, sys.stdout)


if __name__ == "__main__":
    main()
