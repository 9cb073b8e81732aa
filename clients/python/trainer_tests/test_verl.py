"""agentrt_client.verl inside verl 0.9.1 itself (PyPI, CPU): verl's trainer config, RLHFDataset over a parquet
file, the YAML agent-loop registration, and AgentLoopWorker.generate_sequences with its per-sample
postprocessing (padding to prompt_length/response_length, masks, position ids) and batch postprocessing
(TensorDict, rm_scores, extra fields), against `agentrt serve` on the emulator. Runs in $AGENTRT_CACHE/venv-verl
(scripts/test.d/55-trainers.sh).

AgentLoopWorker is the closest real entry point that runs without a GPU: AgentLoopManager only starts it as a
Ray actor next to the rollout servers (which need GPUs) and concatenates the workers' outputs.
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import shutil

import numpy as np
import pytest
import torch

from agentrt_client._shared import close_shared

MODEL = os.environ.get("AGENTRT_QWEN3_MODEL", "")


def model_dir(tmp: pathlib.Path) -> str:
    """The Qwen3 tokenizer the agent uses, plus a Qwen3 config.json (verl reads the model's config, not weights)."""
    d = tmp / "qwen3"
    d.mkdir()
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(pathlib.Path(MODEL) / f, d / f)
    (d / "config.json").write_text(json.dumps({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
                                                 "vocab_size": 151936, "hidden_size": 64, "num_hidden_layers": 1,
                                                 "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 32,
                                                 "intermediate_size": 128, "tie_word_embeddings": True}))
    return str(d)


def verl_config(tmp: pathlib.Path, prompt_length: int, response_length: int):
    """verl's own trainer config (verl/trainer/config/_generated_ppo_trainer.yaml) with the keys a user sets."""
    from omegaconf import OmegaConf

    import verl

    cfg = OmegaConf.load(pathlib.Path(verl.__file__).parent / "trainer" / "config" / "_generated_ppo_trainer.yaml")
    loops = tmp / "agent_loops.yaml"
    loops.write_text("- name: agentrt\n  _target_: agentrt_client.verl.AgentrtAgentLoop\n")
    OmegaConf.update(cfg, "actor_rollout_ref.model.path", model_dir(tmp))
    OmegaConf.update(cfg, "actor_rollout_ref.rollout.name", "sglang")
    OmegaConf.update(cfg, "actor_rollout_ref.rollout.prompt_length", prompt_length)
    OmegaConf.update(cfg, "actor_rollout_ref.rollout.response_length", response_length)
    OmegaConf.update(cfg, "actor_rollout_ref.rollout.calculate_log_probs", True)
    OmegaConf.update(cfg, "actor_rollout_ref.rollout.agent.agent_loop_config_path", str(loops))
    OmegaConf.update(cfg, "actor_rollout_ref.rollout.agent.default_agent_loop", "agentrt")
    OmegaConf.update(cfg, "data.max_prompt_length", prompt_length)
    OmegaConf.update(cfg, "data.max_response_length", response_length)
    return cfg


def gen_batch(cfg, tmp: pathlib.Path, tokenizer, questions: list[tuple[str | list, str]], n: int):
    """A generation batch as verl's trainer builds one: RLHFDataset rows, collate_fn, DataProto, the trainer's
    _get_gen_batch split, repeated n times (rollout.n). A question is a user message's text, or the messages (each
    row has a parquet file of its own: a column cannot mix text and content-part messages)."""
    import pandas as pd

    from verl.protocol import DataProto
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    rows = []
    for i, (q, a) in enumerate(questions):
        path = tmp / f"train-{i}.parquet"
        pd.DataFrame([{"data_source": "agentrt", "agent_name": "agentrt",
                       "prompt": [{"role": "user", "content": q}] if isinstance(q, str) else q,
                       "reward_model": {"style": "rule", "ground_truth": a}, "extra_info": {"index": i}}]).to_parquet(path)
        rows.append(RLHFDataset(data_files=[str(path)], tokenizer=tokenizer, config=cfg.data, processor=None)[0])
    batch = DataProto.from_single_dict(collate_fn(rows))
    reward_keys = {"data_source", "reward_model", "extra_info", "uid"} & batch.non_tensor_batch.keys()
    gen = batch.pop(batch_keys=[], non_tensor_batch_keys=list(set(batch.non_tensor_batch.keys()) - reward_keys))
    gen.non_tensor_batch.update(batch.non_tensor_batch)
    return gen.repeat(repeat_times=n, interleave=True)


def generate(cfg, batch):
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    worker = AgentLoopWorker(cfg, llm_client=None)

    async def go():
        try:
            return await worker.generate_sequences(batch)
        finally:
            await close_shared()

    return worker, asyncio.run(go())


def run(stack, tmp_path, monkeypatch, prompt_length, response_length, questions, n=2):
    serve, _ = stack
    monkeypatch.setenv("AGENTRT_URL", serve())
    monkeypatch.setenv("AGENTRT_CONSUMER_ID", f"verl-{tmp_path.name}")
    cfg = verl_config(tmp_path, prompt_length, response_length)
    from verl.workers.config import HFModelConfig  # noqa: F401 - the worker builds it from cfg

    from verl.utils import hf_tokenizer

    tok = hf_tokenizer(cfg.actor_rollout_ref.model.path)
    return generate(cfg, gen_batch(cfg, tmp_path, tok, questions, n))


def test_generate_sequences_completed_and_budget(stack, tmp_path, monkeypatch):
    """Completed episodes and episodes cut by response_length = 40 (tool results included): shapes are verl's,
    every response fits, a budget-truncated one ends on a model token, and the statuses reach extra fields."""
    _, out = run(stack, tmp_path, monkeypatch, 512, 40, [("What is 12*7+3?", "87"), ("What is 6*7?", "42")])
    b = out.batch
    assert b["prompts"].shape == (4, 512) and b["responses"].shape == (4, 40) and b["input_ids"].shape == (4, 552)
    assert b["attention_mask"].shape == (4, 552) and b["rollout_log_probs"].shape == (4, 40)
    status = out.non_tensor_batch["agentrt_status"]
    reason = out.non_tensor_batch["agentrt_status_reason"]
    assert set(status) <= {"completed", "truncated"}, status
    assert "response_budget" in set(reason), reason  # 40 tokens cannot hold a tool call, its result and an answer
    for i in range(4):
        n = int(b["attention_mask"][i, 512:].sum())
        assert 0 < n <= 40
        assert b["response_mask"][i, :n].sum() > 0 and b["response_mask"][i, n:].sum() == 0
        assert b["response_mask"][i, n - 1] == 1, "the response ends on a token the model sampled"
        assert torch.all(b["rollout_log_probs"][i, :n] <= 0)


@pytest.mark.stack(latency="300ms", episode_timeout="100ms")
def test_generate_sequences_aborting_agent(stack, tmp_path, monkeypatch):
    """An agent whose episodes end aborted (deadline): verl gets them with response_mask all 0, reward 0 on the
    last response position (rm_scores), and the status in its non-tensor batch."""
    _, out = run(stack, tmp_path, monkeypatch, 512, 64, [("What is 2+2?", "4")])
    b = out.batch
    assert list(out.non_tensor_batch["agentrt_status"]) == ["aborted", "aborted"]
    assert list(out.non_tensor_batch["agentrt_status_reason"]) == ["deadline", "deadline"]
    assert b["response_mask"].sum() == 0
    assert "rm_scores" in b.keys() and torch.all(b["rm_scores"] == 0)


def test_generate_sequences_failed_sample(stack, tmp_path, monkeypatch):
    """A row agentrt cannot run (an image part for a text-only chat template: failed/template, no tokens at all)
    goes through verl's postprocessing next to a completed one: attention and response masks all 0, its status and
    reason. The completed sample has no reward (the agent has no reward plugin), so verl leaves rm_scores out of the
    batch (agent_loop.py's _postprocess adds it only when every sample has a reward_score) and its reward function
    scores the batch later; the failed sample's 0.0 keeps verl's reward loop from scoring it where one runs."""
    image = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                                          {"type": "text", "text": "What is shown?"}]}]
    _, out = run(stack, tmp_path, monkeypatch, 512, 64, [("What is 6*7?", "42"), (image, "x")], n=1)
    b = out.batch
    assert list(out.non_tensor_batch["agentrt_status"]) == ["completed", "failed"]
    assert out.non_tensor_batch["agentrt_status_reason"][1] == "template"
    assert b["responses"].shape == (2, 64) and b["response_mask"][0].sum() > 0 and b["response_mask"][1].sum() == 0
    assert b["attention_mask"][1].sum() == 0 and "rm_scores" not in b.keys()
    kept = out[np.isin(out.non_tensor_batch["agentrt_status"], ["completed", "truncated"])]  # docs/trainers/verl.md
    assert len(kept) == 1 and list(kept.non_tensor_batch["agentrt_status"]) == ["completed"]


def test_prompt_longer_than_prompt_length_is_refused(stack, tmp_path, monkeypatch):
    """agentrt's system prompt and tool specs make the first prompt longer than the dataset's: with prompt_length
    64 verl's padding would crash; the adapter refuses at the first sample, naming the tokens and the key."""
    from agentrt_client import PromptTooLongError

    with pytest.raises(PromptTooLongError, match=r"first prompt is \d+ tokens.*actor_rollout_ref.rollout.prompt_length = 64"):
        run(stack, tmp_path, monkeypatch, 64, 64, [("What is 2+2?", "4")], n=1)
