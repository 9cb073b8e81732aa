"""agentrt_client.torchrl with TorchRL 0.14.1 itself (PyPI, CPU): trajectories from `agentrt serve` on the emulator
fill a TorchRL ReplayBuffer through TorchRLSource, and TorchRL's GRPOLoss(masking_strategy="rlhf") computes and
back-propagates on a batch of them with a TransformersWrapper policy (a tiny randomly initialised Qwen3 of the real
vocabulary: the loss needs a model's log-probs, not trained weights). Every status is served: completed and
truncated (the response budget) trajectories train; failed and aborted ones are left out, or kept masked.
Runs in $AGENTRT_CACHE/venv-torchrl (scripts/test.d/55-trainers.sh).
"""

from __future__ import annotations

import asyncio
import math
import re

import pytest
import torch

from agentrt_client import Client, trainable
from agentrt_client.torchrl import TorchRLSource, grpo_advantages, to_tensordict
from agentrt_client.trajectory import Trajectory

QUESTION = [{"role": "user", "content": "What is 12*7+3?"}]
IMAGE = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                                      {"type": "text", "text": "What is shown?"}]}]


def correct(traj: Trajectory) -> float:
    """A correctness reward (the agent has no reward plugin): 1.0 when the last assistant message answers 87."""
    last = [m for m in traj.messages if m.get("role") == "assistant"][-1]
    answer = re.search(r"answer is (-?\d+)", str(last.get("content")))
    return 1.0 if answer and answer.group(1) == "87" else 0.0


def tiny_policy():
    import os

    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM
    from torchrl.modules.llm import TransformersWrapper

    torch.manual_seed(0)
    model = Qwen3ForCausalLM(Qwen3Config(vocab_size=151936, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=1, head_dim=8))
    tok = AutoTokenizer.from_pretrained(os.environ["AGENTRT_QWEN3_MODEL"])  # the agent's tokenizer
    return model, TransformersWrapper(model, tokenizer=tok, input_mode="tokens", generate=False, return_log_probs=True,
                                      pad_output=False)


def collect(url: str, consumer: str, buffer, items, **source):
    async def go():
        async with Client(url, consumer) as c:
            return await TorchRLSource(c, buffer, **source).collect(items, max_response_tokens=512,
                                                                     request_id=f"{consumer}-1")

    return asyncio.run(go())


@pytest.mark.stack(wrong_answer_rate=0.5)
def test_grpo_loss_on_a_batch_from_the_emulator(stack):
    """Four completed samples of one question (the emulator misreports some answers, so the rewards vary), two cut
    by a 40-token budget (truncated/response_budget) and an image prompt (failed/template, left out): GRPOLoss
    computes on the six and its gradient reaches the policy."""
    from torchrl.data import LazyStackStorage, ReplayBuffer, SamplerWithoutReplacement
    from torchrl.objectives.llm import GRPOLoss

    serve, _ = stack
    buffer = ReplayBuffer(storage=LazyStackStorage(16), sampler=SamplerWithoutReplacement(), batch_size=6)
    items = [{"id": "full", "messages": QUESTION, "n": 4},
             {"id": "short", "messages": QUESTION, "n": 2, "max_response_tokens": 40},
             {"id": "image", "messages": IMAGE, "n": 1}]
    assert collect(serve(), "torchrl", buffer, items, reward_fn=correct) == 6 and len(buffer) == 6
    batch = buffer.sample()
    by_group: dict[str, list] = {}
    for i in range(6):
        td = batch[i]
        by_group.setdefault(td["query"], []).append(td)
        full, mask, lp = td["tokens", "full"], td["masks", "all_assistant_mask"], td["log_probs", "full"]
        assert full.shape == mask.shape == lp.shape == td["masks", "all_attention_mask"].shape and mask.any()
        prompt = td["tokens", "prompt"]
        assert torch.equal(torch.cat([prompt, td["tokens", "response"]]), full)
        assert torch.isnan(lp[: len(prompt)]).all() and torch.isfinite(lp[mask]).all() and (lp[mask] <= 0).all()
        assert mask[-1], "the trajectory ends on a token the model sampled"
        assert td["advantage"].shape == (len(full), 1) and td["next", "done"].all()
    groups = {q.rsplit("/", 1)[-1]: tds for q, tds in by_group.items()}
    assert sorted(groups) == ["full", "short"], sorted(groups)  # the failed image sample is left out
    assert {td["status"] for td in groups["full"]} == {"completed"}
    assert {td["status"] for td in groups["short"]} == {"truncated"}
    assert all(len(td["tokens", "response"]) <= 40 for td in groups["short"])
    rewards = [td["next", "reward"].item() for td in groups["full"]]
    assert set(rewards) == {0.0, 1.0}, rewards  # deterministic: the emulator's seed and the request id
    adv = torch.stack([td["advantage"][0, 0] for td in groups["full"]])
    assert abs(adv.sum().item()) < 1e-4 and (adv != 0).all()

    model, policy = tiny_policy()
    out = GRPOLoss(policy, masking_strategy="rlhf")(batch)
    total = out.loss_objective + out.loss_entropy  # GRPOLoss returns a GRPOLossOutput tensorclass
    assert torch.isfinite(total) and total.requires_grad
    total.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


@pytest.mark.stack(latency="300ms", episode_timeout="100ms")
def test_aborted_trajectories_stay_out_of_training(stack):
    """An agent whose episodes end aborted (deadline): the source writes none of them, or with keep_untrainable
    writes them with no assistant token, reward 0 and advantage 0."""
    from torchrl.data import LazyStackStorage, ReplayBuffer

    serve, _ = stack
    url = serve()
    items = [{"id": "q", "messages": QUESTION, "n": 2}]
    dropped = ReplayBuffer(storage=LazyStackStorage(4))
    assert collect(url, "torchrl-drop", dropped, items) == 0 and len(dropped) == 0
    kept = ReplayBuffer(storage=LazyStackStorage(4))
    assert collect(url, "torchrl-keep", kept, items, keep_untrainable=True) == 2 and len(kept) == 2
    for i in range(2):
        td = kept[i]
        assert td["status"] == "aborted" and len(td["tokens", "full"]) > 0
        assert not td["masks", "all_assistant_mask"].any() and td["next", "reward"].item() == 0.0
        assert (td["advantage"] == 0).all()


def test_untrainable_trajectories_are_masked():
    data = {"token_ids": [1, 2, 3, 4], "loss_mask": [0, 0, 1, 1], "logprobs": [None, None, -0.5, -0.25],
            "segments": [{"kind": "prompt", "offset": 0, "length": 2}, {"kind": "response", "offset": 2, "length": 2}],
            "status": "aborted", "reward": 1.0, "messages": [{"role": "user", "content": "q"}]}
    aborted = Trajectory(seq=1, request_id="r", item_id="i", sample_index=2, group_id="r/i", trajectory_id="r/i/2", data=data)
    assert not trainable(aborted)
    td = to_tensordict(aborted)
    assert not td["masks", "all_assistant_mask"].any() and td["next", "reward"].item() == 0.0
    lp = td["log_probs", "full"].tolist()
    assert math.isnan(lp[0]) and math.isnan(lp[1]) and lp[2:] == [-0.5, -0.25]  # TorchRL's pad for no score
    done = dict(data, status="completed")
    tds = grpo_advantages([to_tensordict(Trajectory(1, "r", "i", k, "r/i", f"r/i/{k}", dict(done, reward=float(k))))
                           for k in range(2)] + [td])
    assert tds[0]["advantage"].shape == (4, 1) and tds[0]["advantage"][0, 0] < 0 < tds[1]["advantage"][0, 0]
    assert abs(tds[0]["advantage"][0, 0] + tds[1]["advantage"][0, 0]) < 1e-5  # the aborted one is not in the group
    assert (tds[2]["advantage"] == 0).all()
    with pytest.raises(ValueError, match="has no reward"):
        to_tensordict(Trajectory(1, "r", "i", 0, "r/i", "r/i/0", dict(done, reward=None)))
