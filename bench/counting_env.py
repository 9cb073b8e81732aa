"""An environment service (docs/environments.md) that only counts: live environments (create to close), the most at
once, and the time-weighted mean from the first create to the last close. GET /stats returns them as JSON.
bench/env_split.sh uses it to show how a cluster-wide max_concurrent is used. Standard library only.

    python3 bench/counting_env.py --port 0   # prints "http://127.0.0.1:PORT" on its first line
"""

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Lock()
state = {"live": set(), "by_episode": {}, "creates": 0, "most": 0, "area": 0.0, "first": None, "last": None}


def _advance(now):
    # Adds the live count since the last change to the time-weighted area (lock held).
    if state["last"] is not None:
        state["area"] += len(state["live"]) * (now - state["last"])
    state["last"] = now


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/tools":
            return self._reply(200, {"service": "counting 1", "tools": [{"name": "lookup", "description": "Looks a word up.",
                                     "parameters": {"type": "object", "properties": {"word": {"type": "string"}}}}]})
        if self.path == "/stats":
            with lock:
                span = (state["last"] - state["first"]) if state["first"] is not None else 0.0
                mean = state["area"] / span if span > 0 else 0.0
                return self._reply(200, {"creates": state["creates"], "most": state["most"], "live": len(state["live"]),
                                         "mean_live": mean, "span_s": span})
        self._reply(404, {"error": "not found"})

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"null") if n else None
        if self.path == "/create":
            ep = (body or {}).get("episode_id", "")
            with lock:
                now = time.monotonic()
                env = state["by_episode"].get(ep)
                if env is None or env not in state["live"]:
                    _advance(now)
                    if state["first"] is None:
                        state["first"] = now
                    state["creates"] += 1
                    env = f"env{state['creates']}"
                    state["by_episode"][ep] = env
                    state["live"].add(env)
                    state["most"] = max(state["most"], len(state["live"]))
            return self._reply(200, {"env_id": env})
        if self.path.startswith("/envs/") and self.path.endswith("/close"):
            env = self.path[len("/envs/"):-len("/close")]
            with lock:
                if env in state["live"]:
                    _advance(time.monotonic())
                    state["live"].discard(env)
            return self._reply(200, {})
        if self.path.startswith("/envs/") and self.path.endswith("/call"):
            return self._reply(200, {"content": "found", "is_error": False})
        self._reply(404, {"error": "not found"})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    srv = ThreadingHTTPServer((args.host, args.port), Handler)
    print(f"http://{args.host}:{srv.server_address[1]}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
