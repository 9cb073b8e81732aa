"""slime integration: a custom generate function (slime's ``--custom-generate-function-path``).

    --custom-generate-function-path agentrt_client.slime.generate

with ``AGENTRT_URL`` (or ``args.agentrt_url``) pointing at ``agentrt serve``'s WebSocket endpoint, and optionally
``AGENTRT_TOKEN``, ``AGENTRT_AGENT``, ``AGENTRT_CONSUMER_ID``. slime calls ``generate`` once per sample; the
episode runs in agentrt (multi-turn, tools, reward plugin) and the sample comes back filled with ``tokens``,
``response_length``, ``loss_mask``, ``rollout_log_probs``, ``status``, ``reward``, ``weight_versions`` and
``prefix_cache_info`` (SGLang's cached and prompt tokens over the episode's model calls).

slime's ``sampling_params`` (``GenerateState.sampling_params``: temperature, top_p, top_k, max_new_tokens, stop,
stop_token_ids, skip_special_tokens, no_stop_trim, spaces_between_special_tokens, custom_params, sampling_seed)
are forwarded to SGLang verbatim: every key SGLang's ``SamplingParams`` has, but ``n`` (agentrt runs one episode
per sample). ``None`` values are left out, which is what they mean to SGLang.
"""

from __future__ import annotations

from typing import Any

from ._shared import settings, shared_client
from .adapters import to_slime_sample

# SGLang 0.5.23's sampling_params keys (sglang/api/v1/api_types.py SamplingParams; the Go side's
# sglang.SamplingParamNames, which tests compare with SGLang's and with this list). Keys outside it would be
# refused by SGLang and are not forwarded; "n" is agentrt's per item.
SGLANG_SAMPLING_PARAMS = (
    "max_new_tokens", "stop", "stop_token_ids", "stop_regex", "temperature", "top_p", "top_k", "min_p",
    "frequency_penalty", "presence_penalty", "repetition_penalty", "min_new_tokens", "n", "json_schema", "regex",
    "ebnf", "structural_tag", "ignore_eos", "skip_special_tokens", "spaces_between_special_tokens", "no_stop_trim",
    "stream_interval", "logit_bias", "sampling_seed", "custom_params", "beam_width", "watermark", "choice",
)
_SAMPLING_KEYS = frozenset(SGLANG_SAMPLING_PARAMS) - {"n"}


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
