"""slime integration: a custom generate function (slime's ``--custom-generate-function-path``), for slime at
THUDM/slime 624b824a (the contract clients/python/tests/testdata/slime_contract.json is derived from).

    --custom-generate-function-path agentrt_client.slime.generate

with ``AGENTRT_URL`` (or ``args.agentrt_url``) pointing at ``agentrt serve``'s WebSocket endpoint, and optionally
``AGENTRT_TOKEN``, ``AGENTRT_AGENT``, ``AGENTRT_CONSUMER_ID``. slime calls ``generate`` once per sample; the
episode runs in agentrt (multi-turn, tools, reward plugin) and the sample comes back filled with ``tokens``,
``response_length``, ``loss_mask``, ``rollout_log_probs``, ``status``, ``reward``, ``weight_versions`` and
``prefix_cache_info`` (SGLang's cached and prompt tokens over the episode's model calls). An episode of several
samples (the agent's ``[agent.context]`` compacted it) comes back as slime's list-of-samples form: one ``Sample`` per
sample (a deep copy of the one slime passed, each a prefix chain), all with the episode's status and reward.

slime's ``sampling_params`` (``GenerateState.sampling_params``: temperature, top_p, top_k, max_new_tokens, stop,
stop_token_ids, skip_special_tokens, no_stop_trim, spaces_between_special_tokens, custom_params, sampling_seed)
are forwarded to SGLang verbatim: every key SGLang's ``SamplingParams`` has, but ``n`` (agentrt runs one episode
per sample). ``None`` values are left out, which is what they mean to SGLang. ``max_new_tokens`` is slime's budget
for the whole sample's response (``--rollout-max-response-len``; slime's own generate subtracts what the sample
already has): it is sent as the episode's response budget (``max_response_tokens``), which agentrt enforces over
the model calls and tool results together; 0 ends the sample TRUNCATED without an episode, as slime's generate does.

Statuses: completed and truncated samples train (their reward is agentrt's reward plugin's, or, without one,
``None`` so that slime's reward model scores ``sample.response``); aborted and failed samples are removed with
slime's own mechanism (``remove_sample = True``, loss mask 0, reward 0.0). Flags agentrt cannot serve exactly are
refused at the first sample with an error naming them: ``--apply-chat-template`` (agentrt renders the chat
template itself), ``--rollout-top-p`` < 1 (slime's top-p replay needs a patched SGLang's token ids, which agentrt
does not record), ``--use-rollout-routing-replay`` (agentrt does not record routed experts) and
``--partial-rollout`` (an agentrt episode cannot be continued from ``sample.tokens``).
"""

from __future__ import annotations

from typing import Any

from ._shared import settings, shared_client
from .adapters import to_slime_sample, to_slime_samples
from .trajectory import Trajectory

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


class UnsupportedFlagError(ValueError):
    """A slime flag agentrt cannot serve exactly (raised at the first sample)."""


def check_args(args: Any, sample: Any = None) -> None:
    """Refuses the slime flags agentrt cannot serve exactly, naming each (see the module doc)."""
    if getattr(args, "apply_chat_template", False):
        raise UnsupportedFlagError(
            "agentrt: slime's --apply-chat-template renders the prompt with the chat template, and agentrt renders it "
            "again (system prompt and tool specs included), wrapping it twice: run slime without "
            "--apply-chat-template so that sample.prompt stays the dataset's chat messages (--input-key naming a list "
            "of {role, content} messages, or a string taken as one user message)"
        )
    top_p = getattr(args, "rollout_top_p", 1.0)
    if top_p is not None and float(top_p) != 1.0:
        raise UnsupportedFlagError(
            f"agentrt: --rollout-top-p {top_p}: slime then needs rollout_top_p_token_ids/offsets for every response "
            "token (its top-p replay), which only slime's patched SGLang returns and agentrt does not record: run with "
            "--rollout-top-p 1.0, or set top_p in the agent's [agent.sampling] without slime's replay"
        )
    if getattr(args, "use_rollout_routing_replay", False):
        raise UnsupportedFlagError(
            "agentrt: --use-rollout-routing-replay needs rollout_routed_experts for every token of the sample, and "
            "agentrt does not ask SGLang for routed experts (return_routed_experts) nor keep them: run without it"
        )
    if getattr(args, "partial_rollout", False):
        raise UnsupportedFlagError(
            "agentrt: --partial-rollout continues an aborted sample from sample.tokens, and an agentrt episode cannot "
            "be continued that way (its conversation, tool environments and hook state end with the episode): run "
            "without it; agentrt's own partial_rollout = \"resume\" (with mask_offpolicy) continues a turn SGLang "
            "aborted inside the episode"
        )
    status = getattr(sample, "status", None)
    name = getattr(status, "name", status)
    if sample is not None and name not in (None, "PENDING", "pending"):
        raise UnsupportedFlagError(
            f"agentrt: sample {getattr(sample, 'index', None)} arrives with status {name} and "
            f"{getattr(sample, 'response_length', 0)} response tokens: agentrt runs whole episodes and cannot continue "
            "one from sample.tokens (a rollout function that re-runs aborted samples, such as --partial-rollout or the "
            "fully-async rollout, is not supported)"
        )


async def generate(args: Any, sample: Any, sampling_params: dict[str, Any] | None) -> Any:
    """Runs one episode for ``sample`` in agentrt and returns the sample, filled (slime's generate contract)."""
    check_args(args, sample)
    reward_key = getattr(args, "reward_key", None)
    sampling = {k: v for k, v in (sampling_params or {}).items() if k in _SAMPLING_KEYS and v is not None}
    budget = sampling.get("max_new_tokens")
    if budget is not None and int(budget) <= 0:
        # slime's generate ends such a sample TRUNCATED; it has no response to train (see to_slime_sample).
        return to_slime_sample(Trajectory(seq=0, request_id="", item_id="", sample_index=0, group_id="",
                                          trajectory_id="", data={"token_ids": [], "loss_mask": [], "logprobs": [],
                                                                  "segments": [], "status": "truncated",
                                                                  "status_reason": "response_budget"}),
                               sample, reward_key=reward_key)
    cfg = settings(args)
    client = await shared_client(cfg["url"], cfg["consumer_id"], cfg["token"])
    item: dict[str, Any] = {"id": str(getattr(sample, "index", None) or 0), "messages": _messages(sample.prompt), "n": 1}
    if budget is not None:
        item["max_response_tokens"] = int(budget)
    label = getattr(sample, "label", None)
    if label is not None:
        item["label"] = label
    meta = getattr(sample, "metadata", None)
    if isinstance(meta, dict) and meta:
        item["metadata"] = {k: v for k, v in meta.items() if k != "agentrt"}
    trajs = await client.run([item], agent=cfg["agent"], sampling=sampling or None)
    if not trajs:
        raise RuntimeError(f"agentrt: request for sample {item['id']} produced no trajectory")
    if trajs[0].is_multi_sample:
        # An episode whose context was compacted: slime's list-of-samples form, one prefix chain each.
        return to_slime_samples(trajs[0], sample, reward_key=reward_key)
    return to_slime_sample(trajs[0], sample, reward_key=reward_key)
