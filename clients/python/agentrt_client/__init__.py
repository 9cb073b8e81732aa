"""agentrt_client: the trainer side of agentrt's trajectory stream.

Submit rollout requests to ``agentrt serve`` over a WebSocket and receive token-exact trajectories (token ids,
loss mask, logprobs, per-turn provenance) as they finish, with acks, resume and back-pressure. Adapters turn
them into slime ``Sample`` fields, verl ``AgentLoopOutput`` fields or padded numpy arrays; ``agentrt_client.slime``
and ``agentrt_client.verl`` are drop-in trainer integrations, ``agentrt_client.torchrl`` gives TorchRL TensorDicts
and a ReplayBuffer source. The protocol is docs/PROTOCOL.md.
"""

__version__ = "0.1.0"

from .adapters import (
    TRAINABLE_STATUSES,
    AgentLoopOutputFields,
    MultiSampleError,
    PromptTooLongError,
    SlimeSampleFields,
    split,
    summarize,
    to_agent_loop_output,
    to_agent_loop_outputs,
    to_padded_arrays,
    to_slime_sample,
    to_slime_samples,
    trainable,
)
from .client import PROTOCOL_VERSION, Client, TrajectoryIterator, normalize_items
from .errors import (
    AgentrtError,
    AuthError,
    ProtocolError,
    RejectedError,
    RequestFailedError,
    RequestLostError,
    ServerError,
    StreamClosedError,
)
from .trajectory import RequestDone, Trajectory, Welcome

__all__ = [
    "__version__",
    "PROTOCOL_VERSION",
    "TRAINABLE_STATUSES",
    "AgentLoopOutputFields",
    "AgentrtError",
    "AuthError",
    "Client",
    "PromptTooLongError",
    "ProtocolError",
    "RejectedError",
    "RequestDone",
    "RequestFailedError",
    "RequestLostError",
    "ServerError",
    "SlimeSampleFields",
    "StreamClosedError",
    "Trajectory",
    "TrajectoryIterator",
    "Welcome",
    "normalize_items",
    "split",
    "summarize",
    "MultiSampleError",
    "to_agent_loop_output",
    "to_agent_loop_outputs",
    "to_padded_arrays",
    "to_slime_sample",
    "to_slime_samples",
    "trainable",
]
