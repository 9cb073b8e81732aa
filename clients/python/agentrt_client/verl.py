"""verl integration: an agent loop whose ``run`` returns verl's ``AgentLoopOutput``.

Register it in verl's agent loop config (``agent_loop_config_path``)::

    - name: agentrt
      _target_: agentrt_client.verl.AgentrtAgentLoop

and set ``AGENTRT_URL`` (plus optionally ``AGENTRT_TOKEN``, ``AGENTRT_AGENT``, ``AGENTRT_CONSUMER_ID``). The
episode runs in agentrt; ``run`` returns ``prompt_ids``, ``response_ids``, ``response_mask``,
``response_logprobs``, ``reward_score``, ``num_turns`` and ``metrics``, token-exact, with no re-tokenization. An
episode of several samples (compaction) is refused with MultiSampleError: verl 0.9.1's agent loop takes one
output per run.
When verl is importable the output is verl's own ``AgentLoopOutput``.
"""

from __future__ import annotations

from typing import Any

from ._shared import settings, shared_client
from .adapters import AgentLoopOutputFields, MultiSampleError, to_agent_loop_output


def _verl_output_cls() -> Any:
    try:
        from verl.experimental.agent_loop.agent_loop import AgentLoopOutput  # type: ignore

        return AgentLoopOutput
    except Exception:  # noqa: BLE001 - verl is optional
        return AgentLoopOutputFields


def _rollout_config(trainer_config: Any) -> Any:
    """verl's rollout config (``actor_rollout_ref.rollout``) from what verl passes as trainer_config (a
    DictConfigWrap in verl 0.9), or None."""
    cfg = getattr(trainer_config, "config", trainer_config)
    try:
        return cfg.actor_rollout_ref.rollout
    except Exception:  # noqa: BLE001 - not a verl config
        return None


class AgentrtAgentLoop:
    """Duck-types verl's ``AgentLoopBase``: constructed with verl's arguments (``trainer_config``,
    ``server_manager``, ``tokenizer``, ``processor``, ``dataset_cls``, ``data_config``, ...), ``await
    run(sampling_params, **kwargs)`` per sample, where kwargs carry the dataset row (``raw_prompt`` messages,
    ``index``, ``reward_model``, ``extra_info``).

    ``rollout.response_length`` is sent as the episode's response budget (``max_response_tokens``): agentrt caps
    every model call by what is left, tool results included, so the response fits verl's padding and ends on a
    model token. ``rollout.prompt_length`` is checked: a longer first prompt raises PromptTooLongError (the
    measured tokens and the key to raise). Status and reason land in ``extra_fields`` (``agentrt_status``,
    ``agentrt_status_reason``); aborted and failed episodes come with ``response_mask`` all 0 and reward 0.0.
    """

    def __init__(
        self,
        trainer_config: Any = None,
        server_manager: Any = None,
        tokenizer: Any = None,
        processor: Any = None,
        *,
        output_cls: Any = None,
        response_length: int | None = None,
        prompt_length: int | None = None,
        **kwargs: Any,
    ) -> None:
        self.trainer_config = trainer_config
        self.settings = settings(kwargs.get("agentrt") or None)
        self.output_cls = output_cls or _verl_output_cls()
        rollout = _rollout_config(trainer_config)
        if response_length is None and rollout is not None:
            response_length = int(rollout.response_length)
        if prompt_length is None and rollout is not None:
            prompt_length = int(rollout.prompt_length)
        self.response_length = response_length
        self.prompt_length = prompt_length

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
        messages = kwargs.get("raw_prompt")
        if messages is None:
            messages = kwargs.get("messages")
        if messages is None or len(messages) == 0:
            raise ValueError("agentrt: the verl dataset row has no raw_prompt (chat messages)")
        cfg = self.settings
        client = await shared_client(cfg["url"], cfg["consumer_id"], cfg["token"])
        item: dict[str, Any] = {"id": str(kwargs.get("index", 0)), "messages": [dict(m) for m in messages], "n": 1}
        if self.response_length:
            item["max_response_tokens"] = self.response_length
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
        if trajs[0].is_multi_sample:
            raise MultiSampleError(
                f"agentrt: row {item['id']}: the episode has {trajs[0].num_samples} samples (the agent's "
                "[agent.context] compacted its context), and verl's agent loop (verl 0.9.1, "
                "AgentLoopWorker._run_agent_loop) takes exactly one AgentLoopOutput per run(): run this agent without "
                "[agent.context] for verl, or turn the samples into outputs yourself (adapters.to_agent_loop_outputs)"
            )
        return to_agent_loop_output(trajs[0], self.output_cls, max_response_length=self.response_length,
                                    max_prompt_length=self.prompt_length)
