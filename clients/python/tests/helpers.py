from __future__ import annotations

import asyncio
import functools
from typing import Any, Awaitable, Callable


def run_async(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
    """Runs an async test function in a fresh event loop, with a 60 s guard against hangs."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return asyncio.run(asyncio.wait_for(fn(*args, **kwargs), 60))

    return wrapper


def prompts(k: int, n: int = 1) -> list[dict[str, Any]]:
    return [{"id": f"q{i}", "messages": [{"role": "user", "content": f"question {i}"}], "n": n, "label": str(i)} for i in range(k)]
