"""The trajectory a trainer receives, and the request_done record."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STATUSES = ("completed", "truncated", "aborted", "failed")

# The origin fields of an entry of a multi-sample trajectory's "samples".
_ORIGIN_KEYS = ("index", "parent", "branch_turn", "branch_offset", "reason", "first_turn", "prompt_messages", "masked",
                "episode", "agent", "call_id", "depth")


@dataclass
class Trajectory:
    """One finished episode, as delivered by a ``trajectory`` message.

    ``data`` is the trajectory object itself (token_ids, loss_mask, logprobs, segments, status, reward,
    messages, provenance, ...); the properties below read it. ``seq`` is the spool sequence number used to ack.

    An episode whose context was compacted, or that ran sub-agents, is several **samples** (docs/PROTOCOL.md section
    7): ``samples`` lists
    them, each a one-chain ``Trajectory`` of its own (same ids, status, reward and provenance; its own token_ids,
    loss_mask, logprobs, segments and messages; ``sample_origin`` says where it branched). The chain properties of
    the episode itself (token_ids ... segments, messages) are those of its last sample. A one-chain episode has one
    sample: itself.
    """

    seq: int
    request_id: str
    item_id: str
    sample_index: int
    group_id: str
    trajectory_id: str
    data: dict[str, Any] = field(repr=False)
    # The spool that delivered it (welcome.spool_id): ``seq`` means something only there.
    spool_id: str = field(default="", repr=False, compare=False)

    @classmethod
    def from_frame(cls, frame: dict[str, Any]) -> "Trajectory":
        return cls(
            seq=int(frame["seq"]),
            request_id=frame["request_id"],
            item_id=frame["item_id"],
            sample_index=int(frame["sample_index"]),
            group_id=frame["group_id"],
            trajectory_id=frame["trajectory_id"],
            data=frame["trajectory"],
        )

    # The flat, aligned arrays (len(token_ids) == len(loss_mask) == len(logprobs)).
    @property
    def token_ids(self) -> list[int]:
        return self.data["token_ids"]

    @property
    def loss_mask(self) -> list[int]:
        return self.data["loss_mask"]

    @property
    def logprobs(self) -> list[float | None]:
        """Logprob of each token given the ones before it; ``None`` on the first prompt's tokens (loss mask 0)."""
        return self.data["logprobs"]

    @property
    def segments(self) -> list[dict[str, Any]]:
        return self.data.get("segments") or []

    @property
    def samples(self) -> list["Trajectory"]:
        """Every sample of the episode, in order, each as a one-chain Trajectory ([self] for a one-chain episode)."""
        entries = self.data.get("samples")
        if not entries:
            return [self]
        base = {k: v for k, v in self.data.items()
                if k not in ("samples", "tools", "chat_template_kwargs", "weight_versions")}
        out = []
        for e in entries:
            d = dict(base)
            for k in ("token_ids", "loss_mask", "logprobs", "segments", "messages", "weight_versions"):
                if k in e:
                    d[k] = e[k]
            d["sample"] = {k: e[k] for k in _ORIGIN_KEYS if k in e}
            if "tools" in e:  # a sub-agent's sample renders its agent's tools
                d["tools"] = e["tools"]
            elif "tools" in self.data:
                d["tools"] = self.data["tools"]
            out.append(Trajectory(seq=self.seq, request_id=self.request_id, item_id=self.item_id,
                                  sample_index=self.sample_index, group_id=self.group_id,
                                  trajectory_id=self.trajectory_id, data=d, spool_id=self.spool_id))
        return out

    @property
    def num_samples(self) -> int:
        """How many samples the episode has (1 for a one-chain episode)."""
        return len(self.data.get("samples") or ()) or 1

    @property
    def is_multi_sample(self) -> bool:
        return self.num_samples > 1

    @property
    def sample_origin(self) -> dict[str, Any]:
        """Where this sample came from (``index``, ``parent``, ``branch_turn``, ``branch_offset``, ``reason``,
        ``first_turn``, ``prompt_messages``, and ``masked``: true on a summary sample whose response has loss mask 0,
        an agent's ``mask_summary``; on a sub-agent's sample ``episode``, ``agent``, ``call_id`` and ``depth``, and
        ``reason`` "subagent" on its episode's first): set on the items of ``samples`` of a multi-sample episode,
        ``{}`` otherwise."""
        return self.data.get("sample") or {}

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tool specs the prompts render (written for a multi-sample episode only; a sub-agent's sample has its
        agent's)."""
        return self.data.get("tools") or []

    @property
    def status(self) -> str:
        return self.data.get("status", "")

    @property
    def status_reason(self) -> str:
        return self.data.get("status_reason", "")

    @property
    def error(self) -> str:
        """What failed, for a failed or aborted trajectory ("" otherwise)."""
        return self.data.get("error", "")

    @property
    def stop_message(self) -> str:
        """Why a truncated episode stopped, in words: a hook's stop message or the context window's detail."""
        return self.data.get("stop_message", "")

    @property
    def reward(self) -> float | None:
        return self.data.get("reward")

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.data.get("messages") or []

    @property
    def provenance(self) -> dict[str, Any]:
        return self.data.get("provenance") or {}

    @property
    def prompt_length(self) -> int:
        """Length of the initial prompt segment."""
        segs = self.segments
        return int(segs[0]["length"]) if segs else 0

    @property
    def response_end(self) -> int:
        """End of the last response: a trailing prompt segment (never sent to the model) is left out."""
        segs = self.segments
        if len(segs) > 1 and segs[-1]["kind"] == "prompt":
            return int(segs[-1]["offset"])
        return len(self.token_ids)

    def turns(self) -> list[dict[str, Any]]:
        """The provenance of each model call (``info`` of each response segment), in order."""
        return [s.get("info") or {} for s in self.segments if s.get("kind") == "response"]

    @property
    def num_turns(self) -> int:
        """Model calls made (response segments)."""
        return sum(1 for s in self.segments if s.get("kind") == "response")

    @property
    def weight_versions(self) -> list[str]:
        """The weight_version of every model call, in order (slime's ``Sample.weight_versions``): a turn resumed
        across a weight update (``info.resumed``) contributes the version of each of its spans."""
        out: list[str] = []
        for t in self.turns():
            spans = t.get("weight_versions") or []
            if spans:
                out.extend(str(s["version"]) for s in spans)
            else:
                out.append(str(t.get("weight_version", "")))
        return out

    @property
    def token_weight_versions(self) -> list[str | None]:
        """The weight version that generated each token, aligned with ``token_ids`` (``None`` on prompt tokens
        and where the server reported none); from the trajectory's ``weight_versions`` spans."""
        out: list[str | None] = [None] * len(self.token_ids)
        for s in self.data.get("weight_versions") or []:
            for i in range(int(s["start"]), int(s["end"])):
                out[i] = str(s["version"])
        return out

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens summed over the model calls (SGLang meta_info.prompt_tokens)."""
        return sum(int(t.get("prompt_tokens") or 0) for t in self.turns())

    @property
    def cached_tokens(self) -> int:
        """Radix-cache hits summed over the model calls (SGLang meta_info.cached_tokens)."""
        return sum(int(t.get("cached_tokens") or 0) for t in self.turns())


@dataclass
class RequestDone:
    """A request produced every trajectory it will produce (``status``: completed, cancelled or failed)."""

    seq: int
    request_id: str
    status: str
    error: str
    trajectories: int

    @classmethod
    def from_frame(cls, frame: dict[str, Any]) -> "RequestDone":
        return cls(
            seq=int(frame["seq"]),
            request_id=frame["request_id"],
            status=frame["status"],
            error=frame.get("error", ""),
            trajectories=int(frame.get("trajectories", 0)),
        )


@dataclass
class Welcome:
    """The server's answer to hello."""

    consumer_id: str
    session_id: str
    unacked: int
    active_requests: list[str]
    max_message_bytes: int
    dropped: int = 0
    # Requests that ended and whose request_done is spooled, not yet acked; None from a server that predates
    # durable requests.
    done_requests: list[str] | None = None
    spool_id: str = ""

    @classmethod
    def from_frame(cls, frame: dict[str, Any]) -> "Welcome":
        return cls(
            consumer_id=frame["consumer_id"],
            session_id=frame.get("session_id", ""),
            unacked=int(frame.get("unacked", 0)),
            active_requests=list(frame.get("active_requests") or []),
            max_message_bytes=int(frame.get("max_message_bytes", 0)),
            dropped=int(frame.get("dropped", 0)),
            done_requests=list(frame["done_requests"] or []) if "done_requests" in frame else None,
            spool_id=str(frame.get("spool_id") or ""),
        )
