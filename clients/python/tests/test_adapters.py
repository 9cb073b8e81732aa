"""Adapters and trainer integrations without the trainers installed: slime's Sample is built from its derived
contract (test_slime_contract.py), verl's AgentLoopOutput is the library's fallback (AgentLoopOutputFields); the
real verl runs in test_verl.py and TorchRL in test_torchrl.py (scripts/test.d/55-trainers.sh)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses

import numpy as np
import pytest

from agentrt_client import AgentLoopOutputFields, Client, PromptTooLongError, Trajectory, split, summarize, to_agent_loop_output, to_padded_arrays, to_slime_sample
from agentrt_client._shared import close_shared
from agentrt_client.slime import generate
from agentrt_client.verl import AgentrtAgentLoop
from helpers import prompts, run_async
from test_slime_contract import slime_sample_class


# slime's Sample as derived from slime's source (tests/testdata/slime_contract.json), not a hand-written copy.
Sample = slime_sample_class()


def make_traj(trailing_prompt: bool = True, status: str = "completed", reward: float | None = 1.0) -> Trajectory:
    # prompt [0,3) | response [3,5) v1 | tool prompt [5,7) | response [7,9) v2 | trailing prompt [9,10)
    ids = [10, 11, 12, 20, 21, 30, 31, 40, 41, 50]
    mask = [0, 0, 0, 1, 1, 0, 0, 1, 1, 0]
    lps = [None, -0.1, -0.2, -0.3, -0.4, -0.5, -0.6, -0.7, -0.8, None]
    segs = [
        {"kind": "prompt", "offset": 0, "length": 3, "turn": 0},
        {"kind": "response", "offset": 3, "length": 2, "turn": 0,
         "info": {"weight_version": "v1", "prompt_tokens": 3, "cached_tokens": 0, "latency_ms": 100}},
        {"kind": "prompt", "offset": 5, "length": 2, "turn": 1},
        {"kind": "response", "offset": 7, "length": 2, "turn": 1,
         "info": {"weight_version": "v2", "prompt_tokens": 7, "cached_tokens": 5, "latency_ms": 50}},
    ]
    if trailing_prompt:
        segs.append({"kind": "prompt", "offset": 9, "length": 1, "turn": 2})
    else:
        ids, mask, lps = ids[:9], mask[:9], lps[:9]
    data = {"token_ids": ids, "loss_mask": mask, "logprobs": lps, "segments": segs, "status": status,
            "status_reason": "stop", "reward": reward, "provenance": {"model": "m"},
            "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "first"},
                         {"role": "tool", "content": "r"}, {"role": "assistant", "content": "final"}]}
    return Trajectory(seq=1, request_id="r", item_id="i", sample_index=0, group_id="r/i", trajectory_id="r/i/0", data=data)


def test_split_leaves_out_trailing_prompt():
    for trailing in (True, False):
        sp = split(make_traj(trailing))
        assert sp.prompt_ids == [10, 11, 12]
        assert sp.response_ids == [20, 21, 30, 31, 40, 41]
        assert sp.response_mask == [1, 1, 0, 0, 1, 1]
        assert sp.response_logprobs == [-0.3, -0.4, -0.5, -0.6, -0.7, -0.8]


def test_split_rejects_broken_trajectories():
    t = make_traj()
    t.data["logprobs"][4] = None
    with pytest.raises(ValueError, match="logprob of token 4"):
        split(t)
    t = make_traj()
    t.data["loss_mask"].pop()
    with pytest.raises(ValueError, match="differ in length"):
        split(t)


def test_slime_sample():
    s = Sample(index=3, prompt="q", label="x", metadata={"kept": 1})
    out = to_slime_sample(make_traj(), s)
    assert out is s
    assert s.tokens == [10, 11, 12, 20, 21, 30, 31, 40, 41]
    assert s.response_length == 6 and len(s.loss_mask) == len(s.rollout_log_probs) == 6
    assert s.loss_mask == [1, 1, 0, 0, 1, 1]
    assert s.rollout_log_probs == [-0.3, -0.4, -0.5, -0.6, -0.7, -0.8]
    assert s.status is Sample.Status.COMPLETED
    assert s.reward == 1.0 and s.weight_versions == ["v1", "v2"] and s.response == "final"
    assert s.metadata["kept"] == 1 and s.metadata["agentrt"]["trajectory_id"] == "r/i/0"
    assert s.prefix_cache_info == Sample.PrefixCacheInfo(cached_tokens=5, total_prompt_tokens=10)
    # Every field the hook sets exists on slime's Sample: nothing was added by accident.
    assert set(vars(s)) == {f.name for f in dataclasses.fields(Sample)}
    for status, member in [("truncated", Sample.Status.TRUNCATED), ("aborted", Sample.Status.ABORTED), ("failed", Sample.Status.FAILED)]:
        got = to_slime_sample(make_traj(status=status), Sample())
        assert got.status is member
        trains = status == "truncated"
        assert got.remove_sample is not trains and got.reward == 1.0 if trains else got.reward == 0.0
        assert got.loss_mask == ([1, 1, 0, 0, 1, 1] if trains else [0] * 6) and got.tokens == s.tokens
    with pytest.raises(ValueError, match="unknown trajectory status"):
        to_slime_sample(make_traj(status="weird"), Sample())
    # Without a sample class: the library's own fields object with string statuses.
    assert to_slime_sample(make_traj()).status == "COMPLETED"


def test_agent_loop_output():
    out = to_agent_loop_output(make_traj())
    assert isinstance(out, AgentLoopOutputFields)
    assert out.prompt_ids == [10, 11, 12]
    assert out.response_ids == [20, 21, 30, 31, 40, 41]
    assert out.response_mask == [1, 1, 0, 0, 1, 1]
    assert out.response_logprobs == [-0.3, -0.4, -0.5, -0.6, -0.7, -0.8]
    assert out.reward_score == 1.0
    assert out.num_turns == 4  # verl: user turns (initial prompt + tool result) + assistant turns
    assert out.metrics == {"generate_sequences": 0.15, "tool_calls": 0.0}
    assert out.extra_fields == {"agentrt_status": "completed", "agentrt_status_reason": "stop", "agentrt_trajectory_id": "r/i/0"}
    # nothing is cut: a longer response or prompt than verl's padding is an error naming the key
    with pytest.raises(ValueError, match="response_length = 3"):
        to_agent_loop_output(make_traj(), max_response_length=3)
    with pytest.raises(PromptTooLongError, match=r"first prompt is 3 tokens.*prompt_length = 2: raise it to at least 3"):
        to_agent_loop_output(make_traj(), max_prompt_length=2)
    for status in ("aborted", "failed"):
        bad = to_agent_loop_output(make_traj(status=status))
        assert bad.response_mask == [0] * 6 and bad.reward_score == 0.0 and bad.extra_fields["agentrt_status"] == status


def test_padded_arrays():
    a = make_traj()
    b = Trajectory(seq=2, request_id="r", item_id="j", sample_index=0, group_id="r/j", trajectory_id="r/j/0", data={
        "token_ids": [1, 2, 3, 4, 5], "loss_mask": [0, 0, 1, 1, 1], "logprobs": [None, -1.0, -2.0, -3.0, -4.0],
        "segments": [{"kind": "prompt", "offset": 0, "length": 2, "turn": 0},
                     {"kind": "response", "offset": 2, "length": 3, "turn": 0, "info": {}}],
        "status": "truncated", "reward": None})
    arr = to_padded_arrays([a, b], pad_token_id=-1)
    assert arr["prompts"].tolist() == [[10, 11, 12], [-1, 1, 2]]
    assert arr["responses"].tolist() == [[20, 21, 30, 31, 40, 41], [3, 4, 5, -1, -1, -1]]
    assert arr["response_mask"].tolist() == [[1, 1, 0, 0, 1, 1], [1, 1, 1, 0, 0, 0]]
    assert arr["attention_mask"].tolist() == [[1] * 9, [0, 1, 1, 1, 1, 1, 0, 0, 0]]
    assert arr["position_ids"].tolist() == [list(range(9)), [0, 0, 1, 2, 3, 4, 4, 4, 4]]
    assert arr["input_ids"].shape == (2, 9)
    np.testing.assert_allclose(arr["rollout_log_probs"][1], [-2, -3, -4, 0, 0, 0])
    assert arr["rewards"][0] == 1.0 and np.isnan(arr["rewards"][1])
    assert arr["token_level_rewards"][0].tolist() == [0, 0, 0, 0, 0, 1]
    assert arr["num_turns"].tolist() == [4, 2]
    short = to_padded_arrays([a], max_prompt_length=2, max_response_length=4)
    assert short["prompts"].tolist() == [[11, 12]] and short["responses"].tolist() == [[20, 21, 30, 31]]


def test_error_and_stop_message():
    stopped = make_traj(status="truncated", reward=None)
    stopped.data.update(status_reason="max_tool_iters", stop_message="Max tool iterations (5) reached.")
    assert stopped.stop_message == "Max tool iterations (5) reached." and stopped.error == ""
    failed = make_traj(status="aborted", reward=None)
    failed.data["error"] = "hook limiter on message_added: boom"
    assert failed.error == "hook limiter on message_added: boom" and failed.stop_message == ""


def test_summarize():
    s = summarize([make_traj(), make_traj(status="truncated", reward=0.0)])
    assert s["status"] == {"completed": 1, "truncated": 1}
    assert s["mean_reward"] == 0.5 and s["tokens"] == 20
    assert s["prompt_tokens"] == 20 and s["cached_tokens"] == 10 and s["prefix_cache_hit_ratio"] == 0.5


def test_slime_generate_hook(devserver):
    srv = devserver()

    @run_async
    async def body():
        args = argparse.Namespace(agentrt_url=srv.url, agentrt_consumer_id="slime-test")
        samples = [Sample(index=i, prompt=f"question {i}", label=str(i)) for i in range(4)]
        outs = await asyncio.gather(*[generate(args, s, {"temperature": 1.0, "max_new_tokens": 64, "unrelated": 1}) for s in samples])
        for s, out in zip(samples, outs):
            assert out is s and s.status is Sample.Status.COMPLETED
            assert len(s.tokens) == 256 and s.response_length == 256 - 64
            assert len(s.loss_mask) == len(s.rollout_log_probs) == s.response_length
            assert all(isinstance(x, float) for x in s.rollout_log_probs)
            assert s.weight_versions == ["default", "default"]
        await close_shared()
        async with Client(srv.url, "slime-test") as c:  # everything the hook received was acked
            assert c.welcome.unacked == 0

    body()


def test_verl_agent_loop(devserver):
    srv = devserver()

    @run_async
    async def body():
        loop = AgentrtAgentLoop(None, None, None, None,
                                agentrt=argparse.Namespace(agentrt_url=srv.url, agentrt_consumer_id="verl-test"))
        out = await loop.run({"temperature": 1.0, "top_p": 1.0}, raw_prompt=[{"role": "user", "content": "hi"}], index=5,
                             reward_model={"ground_truth": "42"}, extra_info={"split": "train"})
        assert isinstance(out, AgentLoopOutputFields)
        assert len(out.prompt_ids) == 64 and len(out.response_ids) == 192
        assert len(out.response_mask) == len(out.response_logprobs) == 192
        assert out.num_turns == 4 and out.reward_score in (0.0, 1.0)
        with pytest.raises(ValueError, match="raw_prompt"):
            await loop.run({})
        await close_shared()

    body()


def test_run_many_prompts(devserver):
    """64 prompts x n=8 through one client, as examples/trainer.py does."""
    srv = devserver()

    @run_async
    async def body():
        async with Client(srv.url, "trainer") as c:
            trajs = await c.run(prompts(64, n=8), timeout=50)
            assert len(trajs) == 512 and len({t.trajectory_id for t in trajs}) == 512
            s = summarize(trajs)
            assert s["status"] == {"completed": 512} and s["prefix_cache_hit_ratio"] > 0

    body()


def test_slime_forwards_sglang_sampling_params():
    """The slime hook forwards exactly SGLang's sampling params (but n): the same list as the Go side's
    sglang.SamplingParamNames, which sglang's contract test compares with SGLang's api_types."""
    import pathlib
    import re

    from agentrt_client import slime

    src = (pathlib.Path(__file__).resolve().parents[3] / "sglang" / "types.go").read_text()
    block = re.search(r"var SamplingParamNames = \[\]string\{(.*?)\}", src, re.S).group(1)
    assert tuple(re.findall(r'"([a-z_]+)"', block)) == slime.SGLANG_SAMPLING_PARAMS
    assert slime._SAMPLING_KEYS == set(slime.SGLANG_SAMPLING_PARAMS) - {"n"}


def test_resumed_turn_weight_versions():
    # the first turn was aborted by a weight update after one token (v1) and resumed on v2; mask_offpolicy
    # zeroed the v1 token
    t = make_traj(trailing_prompt=False)
    t.data["segments"][1]["info"].update(weight_version="v2", resumed=1,
                                         weight_versions=[{"version": "v1", "start": 0, "end": 1},
                                                          {"version": "v2", "start": 1, "end": 2}])
    t.data["weight_versions"] = [{"version": "v1", "start": 3, "end": 4}, {"version": "v2", "start": 4, "end": 5},
                                 {"version": "v2", "start": 7, "end": 9}]
    t.data["loss_mask"][3] = 0
    t.data["offpolicy_masked"] = True
    assert t.weight_versions == ["v1", "v2", "v2"]
    assert t.token_weight_versions == [None, None, None, "v1", "v2", None, None, "v2", "v2"]
    s = to_slime_sample(t, Sample(index=0, prompt="q"))
    assert s.weight_versions == ["v1", "v2", "v2"] and s.loss_mask == [0, 1, 0, 0, 1, 1]


# A multi-sample episode as the runtime writes it: bench/compaction.sh with CB_EPISODES=1 CB_TURNS=7
# CB_MAX_TOKENS=560 CB_KEEP=1 (a 7-turn scripted task whose context is compacted twice: three samples), checked there
# by bench/check.py.
def multi_sample_traj(reward: float | None = 0.5, status: str = "completed") -> Trajectory:
    import json
    import pathlib

    data = json.loads((pathlib.Path(__file__).parent / "testdata" / "multi_sample_trajectory.json").read_text())
    data["reward"], data["status"] = reward, status
    return Trajectory(seq=7, request_id="r", item_id=data["item_id"], sample_index=0, group_id=data["group_id"],
                      trajectory_id=data["id"], data=data)


def test_samples_of_a_one_chain_trajectory():
    t = make_traj()
    assert t.samples == [t] and t.num_samples == 1 and not t.is_multi_sample and t.sample_origin == {}


def test_samples_of_a_multi_sample_trajectory():
    t = multi_sample_traj()
    ss = t.samples
    assert t.is_multi_sample and t.num_samples == len(ss) == 3
    turns = 0
    for k, s in enumerate(ss):
        o = s.sample_origin
        assert o["index"] == k and o["first_turn"] == turns
        assert o["parent"] == k - 1 and (k == 0 or o["reason"] == "compaction")
        assert len(s.token_ids) == len(s.loss_mask) == len(s.logprobs)
        assert s.segments[0]["kind"] == "prompt" and s.segments[-1]["kind"] == "response"
        assert s.reward == 0.5 and s.status == "completed" and s.trajectory_id == t.trajectory_id
        turns += s.num_turns
    assert turns == 7
    # the episode's own chain is its last sample
    assert ss[-1].token_ids == t.token_ids and ss[-1].messages == t.messages
    assert ss[0].token_ids != t.token_ids and len(t.tools) == 1
    assert all("masked" not in s.sample_origin for s in ss)


def test_masked_sample_origin():
    # a summary sample of an agent with mask_summary: "masked" reaches sample_origin, its loss mask as sent
    data = multi_sample_traj().data
    data["samples"][1]["masked"] = True
    data["samples"][1]["loss_mask"] = [0] * len(data["samples"][1]["loss_mask"])
    t = Trajectory(seq=7, request_id="r", item_id=data["item_id"], sample_index=0, group_id=data["group_id"],
                   trajectory_id=data["id"], data=data)
    ss = t.samples
    assert ss[1].sample_origin["masked"] is True and not any(ss[1].loss_mask)
    assert "masked" not in ss[0].sample_origin and "masked" not in ss[2].sample_origin


def test_one_output_adapters_refuse_multi_sample():
    from agentrt_client import MultiSampleError

    t = multi_sample_traj()
    for f in (lambda: to_slime_sample(t), lambda: to_agent_loop_output(t), lambda: to_padded_arrays([t])):
        with pytest.raises(MultiSampleError, match="3 samples"):
            f()


def test_to_slime_samples():
    from agentrt_client import to_slime_samples

    t = multi_sample_traj()
    proto = Sample(prompt="q", metadata={"kept": 1})
    out = to_slime_samples(t, proto)
    assert len(out) == 3 and all(isinstance(x, Sample) for x in out)
    assert proto.tokens == [] and proto.metadata == {"kept": 1}  # the prototype is copied, not filled
    for x, s in zip(out, t.samples):
        sp = split(s)
        assert x.tokens == sp.prompt_ids + sp.response_ids == s.token_ids
        assert x.response_length == len(x.loss_mask) == len(x.rollout_log_probs) == len(sp.response_ids) > 0
        assert x.reward == 0.5 and x.status == Sample.Status.COMPLETED and not x.remove_sample
        assert x.metadata["kept"] == 1 and x.metadata["agentrt"]["sample"] == s.sample_origin
    # an aborted episode removes every sample, as one sample is removed
    bad = to_slime_samples(multi_sample_traj(status="aborted"), Sample())
    assert all(x.remove_sample and not any(x.loss_mask) for x in bad)


def test_to_agent_loop_outputs():
    from agentrt_client import to_agent_loop_outputs

    t = multi_sample_traj()
    outs = to_agent_loop_outputs(t)
    assert len(outs) == 3
    for o, s in zip(outs, t.samples):
        assert o.prompt_ids == s.token_ids[: s.segments[0]["length"]] and o.reward_score == 0.5
        assert o.prompt_ids + o.response_ids == s.token_ids


def subagent_traj(reward: float | None = 1.0) -> Trajectory:
    # bench/subagent.sh with SB_EPISODES=1: a lead agent that ran the coder agent twice (trajs.jsonl, line 1)
    import json
    import pathlib

    data = json.loads((pathlib.Path(__file__).parent / "testdata" / "subagent_trajectory.json").read_text())
    data["reward"] = reward
    return Trajectory(seq=3, request_id="r", item_id=data["item_id"], sample_index=0, group_id=data["group_id"],
                      trajectory_id=data["id"], data=data)


def test_subagent_samples():
    t = subagent_traj()
    ss = t.samples
    assert t.num_samples == len(ss) == 3
    lead = ss[-1]
    assert lead.sample_origin["parent"] == -1 and "episode" not in lead.sample_origin
    assert lead.token_ids == t.token_ids and lead.tools == t.tools
    for k, s in enumerate(ss[:2]):
        o = s.sample_origin
        assert o["reason"] == "subagent" and o["parent"] == 2 and o["depth"] == 1 and o["agent"] == "coder"
        assert o["episode"] == f"{t.trajectory_id}/{k}.0" and o["first_turn"] == 0 and o["call_id"]
        # the coder's tools (the calculator and itself), not the lead's
        assert sorted(x["function"]["name"] for x in s.tools) == ["calculator", "coder"]
        assert [x["function"]["name"] for x in t.tools] == ["coder"]
        assert s.reward == 1.0 and s.trajectory_id == t.trajectory_id


def test_to_slime_samples_subagent():
    from agentrt_client import to_slime_samples

    t = subagent_traj()
    out = to_slime_samples(t, Sample(prompt="q"))
    assert len(out) == 3
    for x, s in zip(out, t.samples):
        sp = split(s)
        assert x.tokens == s.token_ids and x.response_length == len(sp.response_ids) > 0
        assert x.reward == 1.0 and not x.remove_sample
        assert x.metadata["agentrt"]["sample"] == s.sample_origin
    assert [x.metadata["agentrt"]["sample"].get("depth", 0) for x in out] == [1, 1, 0]
    # the coder's final answers are the lead's tool results
    tool_results = [m["content"] for m in t.messages if m["role"] == "tool"]
    assert tool_results == ["The result is 42.", "I did part two myself."]
    assert out[0].response.endswith("The result is 42.")
