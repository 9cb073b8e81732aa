"""TorchRL integration: trajectories as TensorDicts with TorchRL's LLM data classes, for
``torchrl.objectives.llm.GRPOLoss(masking_strategy="rlhf")``, and a collector-like source that fills a ReplayBuffer
from ``agentrt serve``. Needs ``torch``, ``tensordict`` and ``torchrl`` (tested with torchrl 0.14.1, tensordict
0.14.3).

Each trajectory becomes one TensorDict (stack them with ``lazy_stack``: lengths differ):

- ``("tokens", "full"|"prompt"|"response")``: every token; the first prompt; everything after it (tool results
  included), as slime and verl split them.
- ``("masks", "all_attention_mask")`` (all 1) and ``("masks", "all_assistant_mask")``: the loss mask (1 on tokens
  the model sampled), which GRPOLoss's "rlhf" masking trains on.
- ``("log_probs", "full")``: the rollout logprobs, the first prompt's nulls filled with NaN, TorchRL's own pad for
  positions without a score (its vLLM wrapper does the same; 0.0 would be a log-probability of 1): GRPOLoss skips
  non-finite positions, and these are never assistant tokens anyway.
- ``("history", "full")``: the conversation as a ``torchrl.data.llm.History`` (in a ``ChatHistory``).
- ``("next", "reward")`` (shape [1]) and ``("next", "done")``; ``query``: the group id (samples of one item share it,
  for group advantages); ``status`` and ``trajectory_id``; ``advantage`` when ``grpo_advantages`` fills it.

A trajectory that must not train (``agentrt_client.trainable``: aborted, failed, no model response) has
``all_assistant_mask`` all False, reward 0.0 and advantage 0, and stays out of its group's statistics;
``TorchRLSource`` leaves such trajectories out of the buffer unless ``keep_untrainable`` (then only those with at
least one token: a policy cannot score an empty sequence).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable

from .adapters import trainable
from .trajectory import Trajectory


def to_tensordict(traj: Trajectory, reward: float | None = None) -> Any:
    """One trajectory as a TensorDict of TorchRL's LLM classes (see the module doc). ``reward`` stands in for the
    trajectory's own (its agent's reward plugin's); a trainable trajectory with neither is refused (ValueError), not
    trained as a reward of 0."""
    import torch
    from tensordict import TensorDict
    from torchrl.data.llm import History
    from torchrl.modules.llm import ChatHistory, LogProbs, Masks, Tokens

    end = traj.response_end
    ids = traj.token_ids[:end]
    start = min(traj.prompt_length, end)
    keep = trainable(traj)
    full = torch.tensor(ids, dtype=torch.long)
    assistant = torch.tensor([bool(m) and keep for m in traj.loss_mask[:end]], dtype=torch.bool)
    lps = torch.tensor([math.nan if x is None else float(x) for x in traj.logprobs[:end]], dtype=torch.float32)
    msgs = [{"role": m.get("role", ""), "content": m.get("content") if isinstance(m.get("content"), str) else ""}
            for m in traj.messages] or [{"role": "user", "content": ""}]
    if not keep:
        reward = 0.0
    elif reward is None:
        reward = traj.reward
        if reward is None:
            raise ValueError(
                f"agentrt: trajectory {traj.trajectory_id} has no reward (its agent has no reward plugin): give "
                "TorchRLSource a reward_fn, or to_tensordict a reward"
            )
    return TensorDict(
        {
            "tokens": Tokens(prompt=full[:start], response=full[start:], full=full, padded=False),
            "masks": Masks(all_attention_mask=torch.ones_like(full, dtype=torch.bool), all_assistant_mask=assistant, padded=False),
            "log_probs": LogProbs(full=lps, padded=False),
            "history": ChatHistory(full=History.from_chats([msgs])[0]),
            "query": traj.group_id,
            "trajectory_id": traj.trajectory_id,
            "status": traj.status,
            "next": {"reward": torch.tensor([float(reward)]), "done": torch.tensor([True])},
        },
        batch_size=(),
    )


def grpo_advantages(tds: list[Any], eps: float = 1e-6) -> list[Any]:
    """Sets ``advantage`` on each TensorDict, one value per token (shape [tokens, 1], as GRPOLoss reads it): its
    reward minus its group's mean (by ``query``), divided by the group's standard deviation, as GRPO does. Only
    trainable trajectories (an assistant mask with a token) make up a group's statistics; the others get 0."""
    import torch

    groups: dict[str, list[Any]] = {}
    for td in tds:
        if td["masks", "all_assistant_mask"].any():
            groups.setdefault(td["query"], []).append(td)
        else:
            td["advantage"] = torch.zeros(td["tokens", "full"].shape[0], 1)
    for group in groups.values():
        r = torch.stack([td["next", "reward"] for td in group])
        std = r.std() if len(group) > 1 else torch.tensor(0.0)
        for td, a in zip(group, (r - r.mean()) / (std + eps)):
            td["advantage"] = a.expand(td["tokens", "full"].shape[0], 1).clone()
    return tds


class TorchRLSource:
    """A collector-like source: submits items to ``agentrt serve``, turns the trajectories into TensorDicts with
    group advantages and extends ``buffer`` (a torchrl ReplayBuffer) with them, lazily stacked. ``reward_fn(traj)``
    scores the trainable trajectories that carry no reward (an agent without a reward plugin)."""

    def __init__(
        self,
        client: Any,
        buffer: Any,
        *,
        agent: str | None = None,
        reward_fn: Callable[[Trajectory], float] | None = None,
        keep_untrainable: bool = False,
    ) -> None:
        self.client, self.buffer, self.agent = client, buffer, agent
        self.reward_fn, self.keep_untrainable = reward_fn, keep_untrainable

    async def collect(
        self,
        items: Iterable[Any],
        *,
        n: int | None = None,
        max_response_tokens: int | None = None,
        request_id: str | None = None,
    ) -> int:
        """Runs one request and writes its trajectories to the buffer; returns how many were written.
        ``max_response_tokens`` is the budget of the items that do not set their own."""
        from tensordict import lazy_stack

        items = [dict(it) for it in items]
        if max_response_tokens:
            for it in items:
                it.setdefault("max_response_tokens", max_response_tokens)
        trajs = await self.client.run(items, n=n, agent=self.agent, request_id=request_id)
        keep = [t for t in trajs if trainable(t) or (self.keep_untrainable and t.response_end > 0)]
        tds = grpo_advantages([to_tensordict(t, self._reward(t)) for t in keep])
        if tds:
            self.buffer.extend(lazy_stack(tds))
        return len(tds)

    def _reward(self, traj: Trajectory) -> float | None:
        if traj.reward is None and self.reward_fn is not None and trainable(traj):
            return float(self.reward_fn(traj))
        return None
