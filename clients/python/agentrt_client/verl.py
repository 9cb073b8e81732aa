"""verl integration: an agent loop whose ``run`` returns verl's ``AgentLoopOutput``.

Register it in verl's agent loop config (``agent_loop_config_path``)::

    - name: agentrt
      _target_: agentrt_client.verl.AgentrtAgentLoop

and set ``AGENTRT_URL`` (plus optionally ``AGENTRT_TOKEN``, ``AGENTRT_AGENT``, ``AGENTRT_CONSUMER_ID``). The
episode runs in agentrt; ``run`` returns ``prompt_ids``, ``response_ids``, ``response_mask``,
``response_logprobs``, ``reward_score``, ``num_turns`` and ``metrics``, token-exact, with no re-tokenization.
When verl is importable the output is verl's own ``AgentLoopOutput``.
"""

from __future__ import annotations

from typing import Any

from ._shared import settings, shared_client
from .adapters import AgentLoopOutputFields, to_agent_loop_output


def _verl_output_cls() -> Any:
    try:
        from verl.experimental.agent_loop.agent_loop import AgentLoopOutput  # type: ignore

        return AgentLoopOutput
    except Exception:  # noqa: BLE001 - verl is optional
        return AgentLoopOutputFields


class AgentrtAgentLoop:
    """Duck-types verl's ``AgentLoopBase``: constructed with verl's arguments, ``await run(sampling_params,
    **kwargs)`` per sample, where kwargs carry the dataset row (``raw_prompt`` messages, ``index``, ...)."""

    def __init__(
        self,
        trainer_config: Any = None,
        server_manager: Any = None,
        tokenizer: Any = None,
        processor: Any = None,
        *,
        output_cls: Any = None,
        response_length: int | None = None,
        **kwargs: Any,
    ) -> None:
        self.trainer_config = trainer_config
        self.settings = settings(kwargs.get("agentrt") or None)
        self.output_cls = output_cls or _verl_output_cls()
        self.response_length = response_length
        if self.response_length is None:
            try:
                self.response_length = int(trainer_config.config.actor_rollout_ref.rollout.response_length)
            except Exception:  # noqa: BLE001 - not a verl config
                self.response_length = None

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
        messages = kwargs.get("raw_prompt") or kwargs.get("messages")
        if not messages:
            raise ValueError("agentrt: the verl dataset row has no raw_prompt (chat messages)")
        cfg = self.settings
        client = await shared_client(cfg["url"], cfg["consumer_id"], cfg["token"])
        item: dict[str, Any] = {"id": str(kwargs.get("index", 0)), "messages": list(messages), "n": 1}
        reward_model = kwargs.get("reward_model")
        if isinstance(reward_model, dict) and "ground_truth" in reward_model:
            item["label"] = reward_model["ground_truth"]
        extra = kwargs.get("extra_info")
        if isinstance(extra, dict):
            item["metadata"] = extra
        sampling = {k: v for k, v in (sampling_params or {}).items() if v is not None and k in (
            "temperature", "top_p", "top_k", "repetition_penalty", "max_new_tokens")}
        trajs = await client.run([item], agent=cfg["agent"], sampling=sampling or None)
        if not trajs:
            raise RuntimeError(f"agentrt: request for row {item['id']} produced no trajectory")
        return to_agent_loop_output(trajs[0], self.output_cls, max_response_length=self.response_length)
