#!/usr/bin/env python3
"""Derives slime's contract for a custom generate function from slime's source, as JSON test data.

slime is not on PyPI, so clients/python/tests/test_slime_contract.py cannot import it: it enforces this file
instead. The facts are read from slime's own code with the standard library's ast (nothing is copied by hand):
Sample's fields and statuses (slime/utils/types.py), the conditions and assertions of the code a sample goes
through after generate returns (generate_and_rm, _post_process_rewards, _convert_samples_to_train_data), slime's own
generate (the budget rules), the response slice of the loss, the routing-replay check, and the flags the adapter
refuses. Every condition is recorded by its source text: the test maps each one to a check, so a slime bump that
adds or changes one fails the test until it is enforced.

    python3 scripts/slime-contract/derive.py SLIME_GIT_DIR COMMIT > clients/python/tests/testdata/slime_contract.json

SLIME_GIT_DIR is a clone of THUDM/slime (a bare one works); COMMIT the commit to read.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys


def show(git_dir: str, commit: str, path: str) -> str:
    return subprocess.run(["git", "-C", git_dir, "show", f"{commit}:{path}"], check=True, capture_output=True, text=True).stdout


def find(tree: ast.AST, kind: type, name: str) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, kind) and getattr(node, "name", None) == name:
            return node
    raise SystemExit(f"derive: {kind.__name__} {name} not found: slime changed, update this script")


def functions(tree: ast.AST, name: str) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    raise SystemExit(f"derive: function {name} not found: slime changed, update this script")


def conditions(fn: ast.AST, where: str) -> list[dict[str, str]]:
    """Every assert and if/while condition in fn (in source order), by its source text."""
    out = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Assert):
            out.append({"where": where, "kind": "assert", "source": ast.unparse(node.test)})
        elif isinstance(node, (ast.If, ast.While)):
            out.append({"where": where, "kind": "if", "source": ast.unparse(node.test)})
    out.sort(key=lambda r: (r["kind"], r["source"]))
    return out


def main() -> None:
    git_dir, commit = sys.argv[1], sys.argv[2]
    commit = subprocess.run(["git", "-C", git_dir, "rev-parse", commit], check=True, capture_output=True, text=True).stdout.strip()
    types = ast.parse(show(git_dir, commit, "slime/utils/types.py"))
    rollout = ast.parse(show(git_dir, commit, "slime/ray/rollout.py"))
    sgl = ast.parse(show(git_dir, commit, "slime/rollout/sglang_rollout.py"))
    loss = ast.parse(show(git_dir, commit, "slime/backends/megatron_utils/loss.py"))
    actor = ast.parse(show(git_dir, commit, "slime/backends/megatron_utils/actor.py"))
    arguments = show(git_dir, commit, "slime/utils/arguments.py")

    sample = find(types, ast.ClassDef, "Sample")
    fields = []
    for node in sample.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            fields.append({"name": node.target.id, "type": ast.unparse(node.annotation),
                           "default": ast.unparse(node.value) if node.value is not None else None})
    nested = {}
    for node in sample.body:
        if isinstance(node, ast.ClassDef) and node.name != "Status":
            nested[node.name] = [{"name": n.target.id, "type": ast.unparse(n.annotation), "default": ast.unparse(n.value)}
                                 for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]
    status = find(sample, ast.ClassDef, "Status")
    statuses = {t.targets[0].id: ast.literal_eval(t.value) for t in status.body if isinstance(t, ast.Assign)}
    get_reward = functions(sample, "get_reward_value")

    rules = []
    rules += conditions(functions(rollout, "_convert_samples_to_train_data"), "slime/ray/rollout.py:_convert_samples_to_train_data")
    rules += conditions(functions(rollout, "_post_process_rewards"), "slime/ray/rollout.py:_post_process_rewards")
    rules += conditions(functions(sgl, "generate_and_rm"), "slime/rollout/sglang_rollout.py:generate_and_rm")
    rules += conditions(functions(sample, "_validate_response_metadata_lengths"), "slime/utils/types.py:Sample._validate_response_metadata_lengths")

    # The calls generate_and_rm makes to the custom generate function: its signature contract.
    gar = functions(sgl, "generate_and_rm")
    custom_calls = sorted({ast.unparse(n) for n in ast.walk(gar) if isinstance(n, ast.Call) and ast.unparse(n.func) == "custom_generate_func"})
    # How _post_process_rewards reads rewards, and what it makes of them.
    ppr = functions(rollout, "_post_process_rewards")
    reward_reads = sorted({ast.unparse(n) for n in ast.walk(ppr) if isinstance(n, ast.Call) and ast.unparse(n.func) in ("sample.get_reward_value", "torch.tensor")})
    # slime's own generate: the sample budget (max_new_tokens minus the response so far; 0 ends it TRUNCATED).
    gen = functions(sgl, "generate")
    budget = sorted({ast.unparse(n) for n in ast.walk(gen) if isinstance(n, (ast.AugAssign, ast.Assert))} |
                    {ast.unparse(n.test) for n in ast.walk(gen) if isinstance(n, ast.If)})
    # The loss takes each sample's response as tokens[-response_length:] (so response_length 0 would take all).
    slices = sorted({ast.unparse(n) for n in ast.walk(loss) if isinstance(n, ast.Subscript) and ast.unparse(n) == "tokens[-response_length:]"})
    # Routing replay without rollout_routed_experts.
    frr = functions(actor, "fill_routing_replay")
    raises = sorted({ast.unparse(n.exc) for n in ast.walk(frr) if isinstance(n, ast.Raise) and n.exc is not None})
    flags = sorted(f for f in ("--apply-chat-template", "--rollout-top-p", "--use-rollout-routing-replay", "--partial-rollout",
                               "--mask-offpolicy-in-partial-rollout", "--custom-generate-function-path", "--reward-key",
                               "--rollout-max-response-len") if f'"{f}"' in arguments)

    json.dump({
        "source": "THUDM/slime",
        "commit": commit,
        "derived_by": "scripts/slime-contract/derive.py",
        "sample_fields": fields,
        "nested_classes": nested,
        "statuses": statuses,
        "get_reward_value": ast.unparse(get_reward.body[-1]),
        "custom_generate_calls": custom_calls,
        "reward_reads": reward_reads,
        "generate_budget": budget,
        "loss_response_slices": slices,
        "fill_routing_replay_raises": raises,
        "flags": flags,
        "rules": rules,
    }, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
