"""Adapters from agentrt trajectories to what trainers consume.

- ``to_slime_sample``: fills a slime ``Sample`` (slime/utils/types.py): ``tokens``, ``response_length``,
  ``loss_mask``, ``rollout_log_probs``, ``status``, ``reward``, ``metadata``, ``weight_versions``.
- ``to_agent_loop_output``: verl's ``AgentLoopOutput`` fields (``prompt_ids``, ``response_ids``,
  ``response_mask``, ``response_logprobs``, ``reward_score``, ``num_turns``, ``metrics``).
- ``to_padded_arrays``: a batch as padded numpy arrays in verl's layout (prompts left-padded, responses
  right-padded).

A multi-sample episode (context compaction: ``Trajectory.samples``) becomes one output per sample:
``to_slime_samples`` (slime's list-of-samples form: a custom generate function may return ``list[Sample]`` for one
prompt, each a prefix chain, which slime rewards and trains as samples) and ``to_agent_loop_outputs``. The
one-output functions (``to_slime_sample``, ``to_agent_loop_output``, ``to_padded_arrays``) refuse a multi-sample
trajectory with MultiSampleError rather than train on its last sample alone.

The split follows tito's ``Trajectory.SlimeSample``: the prompt is the initial prompt segment; the response is
everything after it up to the end of the last response (tool results and template glue inside it carry loss
mask 0); a trailing prompt segment that was never sent to the model is left out, so every response logprob is
a real number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from .trajectory import Trajectory


class MultiSampleError(ValueError):
    """A multi-sample trajectory given to a function that makes one output per trajectory."""


def _one_chain(traj: Trajectory, what: str, instead: str) -> None:
    if traj.is_multi_sample:
        raise MultiSampleError(
            f"agentrt: trajectory {traj.trajectory_id} is an episode of {traj.num_samples} samples (its context was "
            f"compacted): {what} makes one output per chain; use {instead}, or trajectory.samples"
        )


@dataclass
class ResponseSplit:
    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]
    response_logprobs: list[float]


def split(traj: Trajectory) -> ResponseSplit:
    """Splits a trajectory into prompt and response (see the module doc). Raises ValueError if a response
    logprob is missing (a trajectory that breaks the aligned-arrays invariant)."""
    ids, mask, lps = traj.token_ids, traj.loss_mask, traj.logprobs
    if not (len(ids) == len(mask) == len(lps)):
        raise ValueError(
            f"trajectory {traj.trajectory_id}: token_ids, loss_mask and logprobs differ in length "
            f"({len(ids)}, {len(mask)}, {len(lps)})"
        )
    end = traj.response_end
    start = min(traj.prompt_length, end)
    rlps = lps[start:end]
    for i, lp in enumerate(rlps):
        if lp is None:
            raise ValueError(f"trajectory {traj.trajectory_id}: logprob of token {start + i} is missing")
    return ResponseSplit(list(ids[:start]), list(ids[start:end]), list(mask[start:end]), [float(x) for x in rlps])


# slime's Sample.Status names, by agentrt status.
_SLIME_STATUS = {"completed": "COMPLETED", "truncated": "TRUNCATED", "aborted": "ABORTED", "failed": "FAILED"}

# What each status means for training. completed and truncated are outcomes of the policy (a truncated episode ran
# out of budget, context or tool iterations: the model did that) and train as answers; aborted (infrastructure: the
# server, a deadline, a cancel, an environment, a hook) and failed (the runtime could not run it: template, parser,
# invariant) say nothing about the policy and must never train as answers.
TRAINABLE_STATUSES = ("completed", "truncated")


def trainable(traj: Trajectory) -> bool:
    """Whether the trajectory may train as an answer: its status is completed or truncated and it has a model
    response (a response of tool results alone, or none, trains nothing)."""
    if traj.status not in TRAINABLE_STATUSES:
        return False
    return any(traj.loss_mask[traj.prompt_length : traj.response_end])


@dataclass
class SlimePrefixCacheInfo:
    """slime's ``Sample.PrefixCacheInfo``: SGLang's cached and prompt tokens summed over the sample's model calls."""

    cached_tokens: int = 0
    total_prompt_tokens: int = 0


@dataclass
class SlimeSampleFields:
    """The slime Sample fields the adapter fills, for use without slime installed."""

    tokens: list[int] = field(default_factory=list)
    response_length: int = 0
    loss_mask: list[int] | None = None
    rollout_log_probs: list[float] | None = None
    status: Any = "pending"
    reward: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    weight_versions: list[str] = field(default_factory=list)
    response: str = ""
    prefix_cache_info: SlimePrefixCacheInfo = field(default_factory=SlimePrefixCacheInfo)
    remove_sample: bool = False


def slime_status(status: str, sample_cls: Any = None) -> Any:
    """Maps an agentrt status to slime's ``Sample.Status`` member (or its name when there is no enum)."""
    name = _SLIME_STATUS.get(status)
    if name is None:
        raise ValueError(f"unknown trajectory status {status!r}")
    enum = getattr(sample_cls, "Status", None) if sample_cls is not None else None
    return enum[name] if enum is not None else name


def _last_assistant_text(traj: Trajectory) -> str:
    for m in reversed(traj.messages):
        if m.get("role") == "assistant":
            c = m.get("content")
            return c if isinstance(c, str) else ""
    return ""


def removed_reward(reward_key: str | None = None) -> Any:
    """The reward of a sample slime must not train on: a number where slime reads one (``_post_process_rewards``
    makes a float tensor of ``Sample.get_reward_value``), under ``--reward-key`` a dict holding it."""
    return {reward_key: 0.0} if reward_key else 0.0


def to_slime_sample(traj: Trajectory, sample: Any = None, *, sample_cls: Any = None, reward_key: str | None = None) -> Any:
    """Fills ``sample`` (a slime ``Sample``, or any object with its fields) from a trajectory and returns it.

    Without ``sample``, a new ``sample_cls()`` (default SlimeSampleFields) is made. ``status`` becomes a member
    of the sample class's ``Status`` enum when it has one. ``metadata`` keeps what the sample had and adds
    ``agentrt`` (trajectory id, status reason, provenance, per-turn info).

    A trajectory that must not train (``trainable``: aborted, failed, or no model response) gets slime's own
    mechanism: ``remove_sample = True`` (slime zeroes its loss mask in ``_convert_samples_to_train_data``), its
    loss mask zeroed here too, and ``reward`` 0.0 (``removed_reward``), so slime neither computes a reward for it
    nor fails on a missing one. slime needs ``response_length >= 1`` (its loss takes ``tokens[-response_length:]``):
    a trajectory without a response keeps its prompt with the last prompt token as a one-token response (loss
    mask 0), or, with no tokens at all, slime's own placeholder ``[0, 0]``.
    """
    _one_chain(traj, "to_slime_sample", "to_slime_samples (slime takes a list of samples for one prompt)")
    if sample is None:
        sample = (sample_cls or SlimeSampleFields)()
    sp = split(traj)
    keep = trainable(traj)
    if not sp.response_ids:
        if sp.prompt_ids:
            sp = ResponseSplit(sp.prompt_ids[:-1], sp.prompt_ids[-1:], [0], [0.0])
        else:
            sp = ResponseSplit([0], [0], [0], [0.0])
    if not keep:
        sp.response_mask = [0] * len(sp.response_ids)
    sample.tokens = sp.prompt_ids + sp.response_ids
    sample.response_length = len(sp.response_ids)
    sample.loss_mask = sp.response_mask
    sample.rollout_log_probs = sp.response_logprobs
    sample.status = slime_status(traj.status, type(sample))
    sample.reward = traj.reward if keep else removed_reward(reward_key)
    sample.remove_sample = not keep
    sample.weight_versions = traj.weight_versions
    if hasattr(sample, "response"):
        sample.response = _last_assistant_text(traj)
    pci = getattr(sample, "prefix_cache_info", None)
    if pci is not None:  # slime's Sample.PrefixCacheInfo: what slime's own generate adds up per /generate call
        pci.cached_tokens = traj.cached_tokens
        pci.total_prompt_tokens = traj.prompt_tokens
    meta = getattr(sample, "metadata", None)
    if not isinstance(meta, dict):
        meta = {}
    meta["agentrt"] = {
        "trajectory_id": traj.trajectory_id,
        "request_id": traj.request_id,
        "group_id": traj.group_id,
        "status": traj.status,
        "status_reason": traj.status_reason,
        "error": traj.error,
        "stop_message": traj.stop_message,
        "provenance": traj.provenance,
        "turns": traj.turns(),
    }
    if traj.sample_origin:
        meta["agentrt"]["sample"] = traj.sample_origin
    sample.metadata = meta
    return sample


def to_slime_samples(traj: Trajectory, sample: Any = None, *, sample_cls: Any = None,
                     reward_key: str | None = None) -> list[Any]:
    """One slime sample per sample of the episode (a one-chain episode gives a list of one), in order, each filled
    as ``to_slime_sample`` fills one, on a deep copy of ``sample`` (or a new ``sample_cls()``). Every sample carries
    the episode's status and reward; ``metadata["agentrt"]["sample"]`` says where each came from. slime's
    ``generate_and_rm`` takes such a list from a custom generate function (the fan-out of one prompt into several
    prefix-chained samples)."""
    import copy

    out = []
    for s in traj.samples:
        target = copy.deepcopy(sample) if sample is not None else None
        out.append(to_slime_sample(s, target, sample_cls=sample_cls, reward_key=reward_key))
    return out


@dataclass
class AgentLoopOutputFields:
    """verl's AgentLoopOutput fields, for use without verl installed (agentrt_client.verl uses verl's own class
    when verl is importable)."""

    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]
    response_logprobs: list[float] | None = None
    routed_experts: Any = None
    reward_score: float | None = None
    num_turns: int = 0
    metrics: dict[str, Any] = field(default_factory=dict)
    extra_fields: dict[str, Any] = field(default_factory=dict)


def verl_num_turns(traj: Trajectory) -> int:
    """verl's num_turns (user turns + assistant turns + 1): the initial prompt, every model response and every
    tool-result prompt up to the end of the last response, that is the segments counted up to response_end."""
    end = traj.response_end
    return sum(1 for s in traj.segments if int(s["offset"]) < end)


class PromptTooLongError(ValueError):
    """A trajectory's first prompt is longer than the trainer's prompt length (verl's rollout.prompt_length)."""


def to_agent_loop_output(
    traj: Trajectory,
    output_cls: Any = None,
    *,
    max_response_length: int | None = None,
    max_prompt_length: int | None = None,
) -> Any:
    """Builds verl's ``AgentLoopOutput`` (or ``output_cls``) from a trajectory.

    Nothing is cut: verl pads prompts to ``rollout.prompt_length`` and responses to ``rollout.response_length``
    and fails on longer ones, so a first prompt longer than ``max_prompt_length`` raises PromptTooLongError naming
    the measured tokens and the key to raise, and a response longer than ``max_response_length`` (agentrt enforces
    it as the episode's max_response_tokens, which agentrt_client.verl sends) raises ValueError.

    ``extra_fields`` carries ``agentrt_status``, ``agentrt_status_reason`` and ``agentrt_trajectory_id``; a
    trajectory that must not train (``trainable``: aborted, failed, no model response) gets ``response_mask`` all
    0 and ``reward_score`` 0.0 (verl then computes no reward for it). ``metrics`` carries ``generate_sequences``
    (seconds of model calls, from per-turn latency) and ``tool_calls`` (0: agentrt does not time tools per
    trajectory yet).
    """
    _one_chain(traj, "to_agent_loop_output", "to_agent_loop_outputs")
    sp = split(traj)
    if max_prompt_length is not None and len(sp.prompt_ids) > max_prompt_length:
        raise PromptTooLongError(
            f"agentrt: trajectory {traj.trajectory_id}: the first prompt is {len(sp.prompt_ids)} tokens (the system "
            f"prompt, tool specs and messages as the agent's chat template renders them), more than "
            f"actor_rollout_ref.rollout.prompt_length = {max_prompt_length}: raise it to at least {len(sp.prompt_ids)}"
        )
    if max_response_length is not None and len(sp.response_ids) > max_response_length:
        raise ValueError(
            f"agentrt: trajectory {traj.trajectory_id}: a response of {len(sp.response_ids)} tokens is longer than "
            f"actor_rollout_ref.rollout.response_length = {max_response_length}: the request did not carry it as "
            f"max_response_tokens (agentrt_client.verl sends it), or the server predates the response budget"
        )
    keep = trainable(traj)
    gen_s = sum(float(t.get("latency_ms") or 0) for t in traj.turns()) / 1000.0
    cls = output_cls or AgentLoopOutputFields
    return cls(
        prompt_ids=sp.prompt_ids,
        response_ids=sp.response_ids,
        response_mask=sp.response_mask if keep else [0] * len(sp.response_ids),
        response_logprobs=sp.response_logprobs,
        reward_score=traj.reward if keep else 0.0,
        num_turns=verl_num_turns(traj),
        metrics={"generate_sequences": gen_s, "tool_calls": 0.0},
        extra_fields={
            "agentrt_status": traj.status,
            "agentrt_status_reason": traj.status_reason,
            "agentrt_trajectory_id": traj.trajectory_id,
        },
    )


def to_agent_loop_outputs(traj: Trajectory, output_cls: Any = None, **kw: Any) -> list[Any]:
    """One verl output per sample of the episode (``to_agent_loop_output`` of each, same keywords), in order; each
    sample's first prompt is its own (a later sample's is the compacted conversation's full render)."""
    return [to_agent_loop_output(s, output_cls, **kw) for s in traj.samples]


def to_padded_arrays(
    trajs: Sequence[Trajectory] | Iterable[Trajectory],
    *,
    pad_token_id: int = 0,
    max_prompt_length: int | None = None,
    max_response_length: int | None = None,
) -> dict[str, Any]:
    """Pads a batch into numpy arrays in verl's layout.

    Returns ``prompts`` [B, P] (left-padded), ``responses`` [B, R] (right-padded), ``response_mask`` [B, R]
    (the loss mask; 0 on padding), ``input_ids`` [B, P+R], ``attention_mask`` [B, P+R] (1 on real tokens),
    ``position_ids`` [B, P+R], ``rollout_log_probs`` [B, R] (float32, 0 on padding), ``rewards`` [B] (float32,
    NaN where a trajectory has none), ``token_level_rewards`` [B, R] (the reward on the last response token),
    ``num_turns`` [B] and ``trajectory_ids`` (a list). P and R are the longest prompt and response, or the given
    maxima (longer prompts keep their last P tokens, longer responses their first R, as verl truncates).
    """
    import numpy as np

    trajs = list(trajs)
    for t in trajs:
        _one_chain(t, "to_padded_arrays", "[s for t in trajs for s in t.samples]")
    splits = [split(t) for t in trajs]
    B = len(trajs)
    P = max_prompt_length if max_prompt_length is not None else max((len(s.prompt_ids) for s in splits), default=0)
    R = max_response_length if max_response_length is not None else max((len(s.response_ids) for s in splits), default=0)
    prompts = np.full((B, P), pad_token_id, dtype=np.int64)
    prompt_attn = np.zeros((B, P), dtype=np.int64)
    responses = np.full((B, R), pad_token_id, dtype=np.int64)
    response_attn = np.zeros((B, R), dtype=np.int64)
    response_mask = np.zeros((B, R), dtype=np.int64)
    logprobs = np.zeros((B, R), dtype=np.float32)
    rewards = np.full((B,), np.nan, dtype=np.float32)
    token_rewards = np.zeros((B, R), dtype=np.float32)
    num_turns = np.zeros((B,), dtype=np.int64)
    for i, (t, s) in enumerate(zip(trajs, splits)):
        p = s.prompt_ids[-P:] if P else []
        if p:
            prompts[i, P - len(p) :] = p
            prompt_attn[i, P - len(p) :] = 1
        r = s.response_ids[:R]
        n = len(r)
        if n:
            responses[i, :n] = r
            response_attn[i, :n] = 1
            response_mask[i, :n] = s.response_mask[:R]
            logprobs[i, :n] = s.response_logprobs[:R]
        if t.reward is not None:
            rewards[i] = t.reward
            if n:
                token_rewards[i, n - 1] = t.reward
        num_turns[i] = verl_num_turns(t)
    attention = np.concatenate([prompt_attn, response_attn], axis=1)
    position_ids = np.clip(np.cumsum(attention, axis=1) - 1, 0, None)
    return {
        "prompts": prompts,
        "responses": responses,
        "response_mask": response_mask,
        "input_ids": np.concatenate([prompts, responses], axis=1),
        "attention_mask": attention,
        "position_ids": position_ids,
        "rollout_log_probs": logprobs,
        "rewards": rewards,
        "token_level_rewards": token_rewards,
        "num_turns": num_turns,
        "trajectory_ids": [t.trajectory_id for t in trajs],
    }


def summarize(trajs: Iterable[Trajectory]) -> dict[str, Any]:
    """Counts by status, mean reward, token totals and the prefix-cache hit ratio (cached / prompt tokens)."""
    status: dict[str, int] = {}
    rewards: list[float] = []
    tokens = response_tokens = prompt_tokens = cached = n = 0
    for t in trajs:
        n += 1
        status[t.status] = status.get(t.status, 0) + 1
        if t.reward is not None:
            rewards.append(float(t.reward))
        tokens += len(t.token_ids)
        response_tokens += sum(t.loss_mask)
        prompt_tokens += t.prompt_tokens
        cached += t.cached_tokens
    return {
        "trajectories": n,
        "status": status,
        "mean_reward": (sum(rewards) / len(rewards)) if rewards else None,
        "tokens": tokens,
        "response_tokens": response_tokens,
        "prompt_tokens": prompt_tokens,
        "cached_tokens": cached,
        "prefix_cache_hit_ratio": (cached / prompt_tokens) if prompt_tokens else None,
    }

