"""Typed errors of the agentrt client."""

from __future__ import annotations


class AgentrtError(Exception):
    """Base class of every error the client raises."""


class StreamClosedError(AgentrtError):
    """The connection is closed and the client will not reconnect (closed by the user, or reconnect=False)."""


class AuthError(AgentrtError):
    """The server refused the bearer token (HTTP 401 before the upgrade, or an ``unauthorized`` error frame)."""


class ProtocolError(AgentrtError):
    """The server spoke something this client does not understand, or refused our protocol version.

    ``retryable`` is true for refusals that pass (HTTP 5xx while a server starts or stops, a hello cut short):
    reconnects retry those.
    """

    def __init__(self, message: str, *, retryable: bool = False):
        super().__init__(message)
        self.retryable = retryable


class ServerError(AgentrtError):
    """An error frame from the server about one of our messages.

    ``code`` is the protocol's error code (``invalid``, ``unknown_type``, ``runner_error``...); ``ref_type`` and
    ``ref_id`` name the message it is about.
    """

    def __init__(self, code: str, message: str, ref_type: str | None = None, ref_id: str | None = None):
        super().__init__(f"{code}: {message}" + (f" (in {ref_type} {ref_id!r})" if ref_type else ""))
        self.code = code
        self.message = message
        self.ref_type = ref_type
        self.ref_id = ref_id


class RejectedError(ServerError):
    """The server rejected a submit; ``reason`` says why."""

    def __init__(self, request_id: str, code: str, reason: str):
        super().__init__(code, reason, "submit", request_id)
        self.request_id = request_id
        self.reason = reason


class RequestFailedError(AgentrtError):
    """A request ended with status ``failed`` (or ``cancelled`` where all samples were required)."""

    def __init__(self, request_id: str, status: str, error: str):
        super().__init__(f"request {request_id!r} ended {status}: {error}")
        self.request_id = request_id
        self.status = status
        self.error = error


class RequestLostError(RequestFailedError):
    """After a reconnect the server no longer knows a request this client waits for (its spool was lost, or
    another server answers): no more of its trajectories and no request_done will come. A server restarted on
    its spool resumes requests itself, so this means lost state. Resubmit it (the same request_id keeps
    trajectory ids, so samples already received are recognised as duplicates); ``Client(lost="resubmit")``,
    the default, does that by itself and raises this only if the resubmit is rejected."""

    def __init__(self, request_id: str, detail: str = ""):
        msg = "the server no longer knows the request (its spool was lost or another server answers)"
        super().__init__(request_id, "lost", msg + (f"; {detail}" if detail else ""))
