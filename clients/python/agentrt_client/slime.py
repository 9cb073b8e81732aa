"""slime integration: a custom generate function (slime's ``--custom-generate-function-path``).

    --custom-generate-function-path agentrt_client.slime.generate

with ``AGENTRT_URL`` (or ``args.agentrt_url``) pointing at ``agentrt serve``'s WebSocket endpoint, and optionally
``AGENTRT_TOKEN``, ``AGENTRT_AGENT``, ``AGENTRT_CONSUMER_ID``. slime calls ``generate`` once per sample; the
episode runs in agentrt (multi-turn, tools, reward plugin) and the sample comes back filled with ``tokens``,
``response_length``, ``loss_mask``, ``rollout_log_probs``, ``status``, ``reward``, ``weight_versions``.
"""

from __future__ import annotations

from typing import Any

from ._shared import settings, shared_client
from .adapters import to_slime_sample

# slime's SamplingParams keys are SGLang's; pass through the ones SGLang's /generate understands.
_SAMPLING_KEYS = {
    "temperature", "top_p", "top_k", "min_p", "max_new_tokens", "min_new_tokens", "stop", "stop_token_ids",
    "skip_special_tokens", "no_stop_trim", "frequency_penalty", "presence_penalty", "repetition_penalty",
    "ignore_eos", "spaces_between_special_tokens", "sampling_seed",
}


def _messages(prompt: Any) -> list[dict[str, Any]]:
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    if isinstance(prompt, list):
        return prompt
    raise TypeError(f"sample.prompt must be a string or a list of chat messages, got {type(prompt).__name__}")


async def generate(args: Any, sample: Any, sampling_params: dict[str, Any] | None) -> Any:
    """Runs one episode for ``sample`` in agentrt and returns the sample, filled (slime's generate contract)."""
    cfg = settings(args)
    client = await shared_client(cfg["url"], cfg["consumer_id"], cfg["token"])
    item: dict[str, Any] = {"id": str(getattr(sample, "index", None) or 0), "messages": _messages(sample.prompt), "n": 1}
    label = getattr(sample, "label", None)
    if label is not None:
        item["label"] = label
    meta = getattr(sample, "metadata", None)
    if isinstance(meta, dict) and meta:
        item["metadata"] = {k: v for k, v in meta.items() if k != "agentrt"}
    sampling = {k: v for k, v in (sampling_params or {}).items() if k in _SAMPLING_KEYS and v is not None}
    trajs = await client.run([item], agent=cfg["agent"], sampling=sampling or None)
    if not trajs:
        raise RuntimeError(f"agentrt: request for sample {item['id']} produced no trajectory")
    return to_slime_sample(trajs[0], sample)
