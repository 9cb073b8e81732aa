"""agentrt_client.slime against slime's own contract.

slime is not on PyPI; tests/testdata/slime_contract.json is derived from its source at a pinned commit by
scripts/slime-contract/derive.py (re-run it when slime is bumped). From it this test builds slime's ``Sample``
(every field, default and status slime has, not a hand-written copy), runs the generate hook through ``agentrt
serve`` on the emulator for every status (completed, truncated by the budget, aborted, failed), and enforces each
condition slime applies to a sample after generate returns: every assert and branch of ``generate_and_rm``,
``_post_process_rewards``, ``_convert_samples_to_train_data`` and ``Sample._validate_response_metadata_lengths``
is mapped to a check below (``RULES``); a condition the mapping does not know fails the test, so a slime bump
cannot add a rule that goes unenforced.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import enum
import inspect
import json
import math
import pathlib
from typing import Any

import pytest

from agentrt_client import slime as slime_hook
from agentrt_client._shared import close_shared
from helpers import run_async
from test_agentrt_e2e import check_trajectory, stack  # noqa: F401 - the stack fixture

CONTRACT = json.loads((pathlib.Path(__file__).parent / "testdata" / "slime_contract.json").read_text())


def slime_sample_class() -> type:
    """slime's Sample, built from the derived fields (names, defaults, nested classes, Status members)."""
    Status = enum.Enum("Status", CONTRACT["statuses"])
    ns: dict[str, Any] = {"field": dataclasses.field, "Status": Status}
    for name, fields in CONTRACT["nested_classes"].items():
        ns[name] = dataclasses.make_dataclass(name, [(f["name"], Any, dataclasses.field(default=eval(f["default"], {}))) for f in fields])
    spec = []
    for f in CONTRACT["sample_fields"]:
        d = f["default"]
        default = eval(d, ns) if d is not None else dataclasses.MISSING
        spec.append((f["name"], Any, default if isinstance(default, dataclasses.Field) else dataclasses.field(default=default)))
    cls = dataclasses.make_dataclass("Sample", spec)
    cls.Status = Status
    for name in CONTRACT["nested_classes"]:
        setattr(cls, name, ns[name])
    exec(f"def get_reward_value(self, args):\n    {CONTRACT['get_reward_value']}", ns)  # slime's own expression
    cls.get_reward_value = ns["get_reward_value"]
    return cls


Sample = slime_sample_class()


def slime_args(**kw: Any) -> argparse.Namespace:
    """slime's args as its parser defaults them for these flags (and the hook's agentrt settings)."""
    base = dict(apply_chat_template=False, rollout_top_p=1.0, use_rollout_routing_replay=False, partial_rollout=False,
                mask_offpolicy_in_partial_rollout=False, reward_key=None, group_rm=False)
    base.update(kw)
    return argparse.Namespace(**base)


def reward_value(s: Any, args: Any) -> float:
    """_post_process_rewards: torch.tensor(raw_rewards, dtype=torch.float) takes each get_reward_value as a real
    number (None raises 'must be real number, not NoneType')."""
    v = s.get_reward_value(args)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
        raise TypeError(f"must be real number, not {type(v).__name__}")
    return float(v)


def _removed(samples, args):
    # generate_and_rm returns an ABORTED sample before any reward model, and a FAILED one holds no answer: each must
    # carry its own reward (a number), and it is removed (slime's remove_sample, loss mask 0), never trained.
    for s in samples:
        if s.status in (Sample.Status.ABORTED, Sample.Status.FAILED):
            reward_value(s, args)
            assert s.remove_sample and not any(s.loss_mask), s


def _reward_none(samples, args):
    # sample.reward is None -> slime's reward model scores sample.response: only for samples that train.
    for s in samples:
        if s.reward is None:
            assert s.status in (Sample.Status.COMPLETED, Sample.Status.TRUNCATED) and not s.remove_sample, s
            assert isinstance(s.response, str) and s.response, "the reward model reads sample.response"


def _loss_mask(samples, args):
    for s in samples:
        assert s.loss_mask is not None and len(s.loss_mask) == s.response_length, s
        assert set(s.loss_mask) <= {0, 1}


def _log_probs(samples, args):
    for s in samples:
        assert s.rollout_log_probs is not None and len(s.rollout_log_probs) == s.response_length
        assert all(isinstance(x, float) and math.isfinite(x) for x in s.rollout_log_probs)


def _top_p_refused(samples, args):
    # rollout_top_p != 1 makes slime assert on top-p token ids agentrt does not have: refused at the first sample.
    for s in samples:
        assert s.rollout_top_p_token_ids is None and s.rollout_top_p_token_offsets is None
    with pytest.raises(slime_hook.UnsupportedFlagError, match="--rollout-top-p"):
        slime_hook.check_args(slime_args(rollout_top_p=0.9))


def _routing_refused(samples, args):
    for s in samples:
        assert s.rollout_routed_experts is None
    with pytest.raises(slime_hook.UnsupportedFlagError, match="--use-rollout-routing-replay"):
        slime_hook.check_args(slime_args(use_rollout_routing_replay=True))


def _partial_refused(samples, args):
    with pytest.raises(slime_hook.UnsupportedFlagError, match="--partial-rollout"):
        slime_hook.check_args(slime_args(partial_rollout=True, mask_offpolicy_in_partial_rollout=True))
    with pytest.raises(slime_hook.UnsupportedFlagError, match="status ABORTED"):
        slime_hook.check_args(slime_args(), Sample(status=Sample.Status.ABORTED, response_length=3))


def _rewards_numeric(samples, args):
    # Once slime's reward model filled the None ones, every reward is a number (group normalisation needs it).
    for s in samples:
        if s.reward is not None:
            reward_value(s, args)


def _ok(_samples, _args):
    """A condition that does not depend on what generate returns (slime's own state, configuration, or a field
    the hook leaves at slime's default, which slime then fills)."""


def _nothing_else_set(samples, args):
    for s in samples:
        assert s.train_metadata is None and s.teacher_log_probs is None and s.multimodal_train_inputs is None
        assert "raw_reward" not in s.metadata and "round_number" not in s.metadata and s.rollout_id is None


# Every condition of the derived contract, by source text, and the check that enforces it on the hook's samples.
RULES = {
    # _convert_samples_to_train_data
    "len(raw_rewards) == len(samples)": _rewards_numeric,
    "len(rewards) == len(samples)": _rewards_numeric,
    "len(sample.loss_mask) == sample.response_length": _loss_mask,
    "len(sample.rollout_top_p_token_offsets) == sample.response_length + 1": _top_p_refused,
    "offset_end == len(sample.rollout_top_p_token_ids)": _top_p_refused,
    "sample.rollout_top_p_token_ids is not None": _top_p_refused,
    "sample.rollout_top_p_token_offsets is not None": _top_p_refused,
    "getattr(self.args, 'rollout_top_p', 1.0) != 1.0": _top_p_refused,
    "getattr(self.args, 'use_rollout_routing_replay', False)": _routing_refused,
    "samples[0].rollout_routed_experts is not None": _routing_refused,
    "any((sample.metadata and 'raw_reward' in sample.metadata for sample in samples))": _nothing_else_set,
    "any((sample.multimodal_train_inputs is not None for sample in samples))": _nothing_else_set,
    "samples[0].metadata and 'round_number' in samples[0].metadata": _nothing_else_set,
    "samples[0].teacher_log_probs is not None": _nothing_else_set,
    "samples[0].train_metadata is not None": _nothing_else_set,
    "rollout_ids[i] is None": _nothing_else_set,
    "tmp_id in existed_rollout_id_values": _ok,
    "sample.loss_mask is None": _loss_mask,
    "sample.remove_sample": _removed,
    "samples[0].metadata is not None": _ok,
    "samples[0].rollout_log_probs is not None": _log_probs,
    "self.custom_convert_samples_to_train_data_func is not None": _ok,
    # _post_process_rewards
    "rewards.shape[-1] == self.args.n_samples_per_prompt * self.args.rollout_batch_size": _rewards_numeric,
    "self.args.advantage_estimator in ['grpo', 'gspo', 'cispo', 'reinforce_plus_plus_baseline'] and self.args.rewards_normalization": _rewards_numeric,
    "self.args.advantage_estimator in ['grpo', 'gspo', 'cispo'] and self.args.grpo_std_normalization": _rewards_numeric,
    "self.custom_reward_post_process_func is not None": _ok,
    # generate_and_rm
    "sample.response is not None": _reward_none,
    "sample.reward is not None": _reward_none,
    "'evaluation' in inspect.signature(custom_generate_func).parameters": _ok,
    "any((sample.status == Sample.Status.ABORTED for sample in samples))": _removed,
    "args.group_rm": _ok,
    "not args.group_rm": _ok,
    "args.partial_rollout and args.mask_offpolicy_in_partial_rollout and (sample.response_length > 0)": _partial_refused,
    "custom_func_path is not None": _ok,
    "isinstance(sample, list)": _ok,
    "sample.reward is None": _reward_none,
    "sample.status == Sample.Status.ABORTED": _removed,
    "sample.status == Sample.Status.COMPLETED or sample.status == Sample.Status.TRUNCATED": _reward_none,
    "state.aborted": _ok,
    # Sample._validate_response_metadata_lengths
    "int(offsets[-1]) != token_id_count": _top_p_refused,
    "offsets.numel() != self.response_length + 1": _top_p_refused,
    "self.loss_mask is not None and len(self.loss_mask) != self.response_length": _loss_mask,
    "self.rollout_log_probs is not None and len(self.rollout_log_probs) != self.response_length": _log_probs,
    "self.rollout_top_p_token_ids is None and self.rollout_top_p_token_offsets is None": _top_p_refused,
    "self.rollout_top_p_token_ids is None or self.rollout_top_p_token_offsets is None": _top_p_refused,
}


def enforce(samples: list[Any], args: argparse.Namespace) -> None:
    unknown = [r for r in CONTRACT["rules"] if r["source"] not in RULES]
    assert not unknown, f"slime {CONTRACT['commit'][:8]} has conditions this test does not enforce: {unknown}"
    for r in CONTRACT["rules"]:
        RULES[r["source"]](samples, args)
    fields = {f["name"] for f in CONTRACT["sample_fields"]}
    for s in samples:
        assert set(vars(s)) == fields, "the hook set an attribute slime's Sample does not have"
        # the loss takes tokens[-response_length:]: a response of 0 tokens would take the whole sample
        assert CONTRACT["loss_response_slices"] == ["tokens[-response_length:]"]
        assert 1 <= s.response_length < len(s.tokens) or s.tokens == [0, 0], s
        assert isinstance(s.status, Sample.Status) and s.status != Sample.Status.PENDING


def test_contract_is_derived_from_the_pinned_commit():
    assert CONTRACT["source"] == "THUDM/slime" and CONTRACT["commit"].startswith("624b824a")
    assert CONTRACT["derived_by"] == "scripts/slime-contract/derive.py"
    # slime calls the hook as custom_generate_func(args, sample, sampling_params) when it takes no evaluation.
    assert "custom_generate_func(args, sample, sampling_params)" in CONTRACT["custom_generate_calls"]
    assert list(inspect.signature(slime_hook.generate).parameters) == ["args", "sample", "sampling_params"]
    # the refused flags exist in slime's parser under these names (the errors name them)
    for flag in ("--apply-chat-template", "--rollout-top-p", "--use-rollout-routing-replay", "--partial-rollout"):
        assert flag in CONTRACT["flags"]
    # slime's generate: the sample budget is max_new_tokens minus the response so far; 0 ends it TRUNCATED
    assert "sampling_params['max_new_tokens'] -= sample.response_length" in CONTRACT["generate_budget"]
    assert "sampling_params['max_new_tokens'] == 0" in CONTRACT["generate_budget"]
    assert CONTRACT["fill_routing_replay_raises"], "fill_routing_replay raises without rollout_routed_experts"


def test_apply_chat_template_refused():
    with pytest.raises(slime_hook.UnsupportedFlagError, match="--apply-chat-template"):
        asyncio.run(slime_hook.generate(slime_args(apply_chat_template=True, agentrt_url="ws://127.0.0.1:1/v1/stream"),
                                        Sample(index=0, prompt="<|im_start|>user\nhi<|im_end|>\n"), {"max_new_tokens": 8}))


def test_zero_budget_is_truncated():
    # slime's 0 (its generate: max_new_tokens == 0 -> TRUNCATED) ends the sample without an episode, never a default.
    args = slime_args(agentrt_url="ws://127.0.0.1:1/v1/stream")
    s = asyncio.run(slime_hook.generate(args, Sample(index=0, prompt="hi"), {"max_new_tokens": 0}))
    assert s.status == Sample.Status.TRUNCATED and s.remove_sample and s.reward == 0.0
    enforce([s], args)
    args = slime_args(agentrt_url="ws://127.0.0.1:1/v1/stream", reward_key="acc")
    s = asyncio.run(slime_hook.generate(args, Sample(index=0, prompt="hi"), {"max_new_tokens": 0}))
    assert s.reward == {"acc": 0.0} and reward_value(s, args) == 0.0


def slime_sampling(budget: int) -> dict[str, Any]:
    """GenerateState.sampling_params as slime builds it (rollout_max_response_len is max_new_tokens)."""
    return dict(temperature=1.0, top_p=1.0, top_k=-1, max_new_tokens=budget, stop=None, stop_token_ids=None,
                skip_special_tokens=False, no_stop_trim=True, spaces_between_special_tokens=False)


def run_hook(url: str, consumer: str, samples: list[Any], budget: int) -> list[Any]:
    args = slime_args(agentrt_url=url, agentrt_consumer_id=consumer)

    @run_async
    async def body():
        outs = await asyncio.gather(*[slime_hook.generate(args, s, slime_sampling(budget)) for s in samples])
        await close_shared()
        return outs

    return body()


def test_every_status_meets_slimes_contract(stack):
    serve, _ = stack
    url = serve()
    math_q = "What is 12*7+3?"
    image = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                                          {"type": "text", "text": "What is shown?"}]}]
    samples = [Sample(index=0, prompt=math_q, label="87"), Sample(index=1, prompt=math_q, label="87"),
               Sample(index=2, prompt=image, label="x")]
    outs = run_hook(url, "slime-contract", samples, 4096)
    assert [s.status for s in outs] == [Sample.Status.COMPLETED, Sample.Status.COMPLETED, Sample.Status.FAILED], [s.metadata["agentrt"] for s in outs]
    assert outs[2].metadata["agentrt"]["status_reason"] == "template"
    assert outs[0].reward is None and not outs[0].remove_sample and sum(outs[0].loss_mask) > 0
    # --rollout-max-response-len 40: the response (tool results included) stays within 40 tokens and ends TRUNCATED
    short = run_hook(url, "slime-contract-40", [Sample(index=3 + i, prompt=math_q, label="87") for i in range(3)], 40)
    for s in short:
        assert s.response_length <= 40 and s.status == Sample.Status.TRUNCATED, (s.response_length, s.metadata["agentrt"])
        assert s.metadata["agentrt"]["status_reason"] == "response_budget" and s.loss_mask[-1] == 1
    args = slime_args()
    # slime's reward model fills the None rewards before _post_process_rewards (a math rm: 1 or 0)
    for s in outs + short:
        if s.reward is None:
            s.reward = 1.0 if "87" in s.response else 0.0
    enforce(outs + short, args)


@pytest.mark.stack(latency="300ms", episode_timeout="100ms")
def test_aborted_meets_slimes_contract(stack):
    serve, _ = stack
    url = serve()
    outs = run_hook(url, "slime-abort", [Sample(index=i, prompt="What is 2+2?", label="4") for i in range(2)], 4096)
    for s in outs:
        assert s.status == Sample.Status.ABORTED and s.metadata["agentrt"]["status_reason"] == "deadline", s.metadata["agentrt"]
        assert s.reward == 0.0 and s.remove_sample and s.loss_mask == [0] * s.response_length
    enforce(outs, slime_args())
