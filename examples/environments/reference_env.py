#!/usr/bin/env python3
"""A reference environment service for agentrt's remote environments (docs/environments.md), standard library only.

Each environment is a small in-memory workspace of text files, seeded from the episode's metadata:

    {"files": {"README.md": "..."}, "expect": {"answer.txt": "42"}}

Its tools are list_files, read_file and write_file; its reward is 1.0 when every file named in "expect" holds
exactly the expected text, else 0.0 (null when the metadata expects nothing).

    python3 reference_env.py --port 8765

prints "listening http://127.0.0.1:PORT" once it accepts connections (--port 0 picks a free port). The other flags
inject faults for tests: --fail-creates N answers each episode's first N create requests with a 503,
--create-delay S makes every create take S seconds, --exit-on TOOL ends the process when TOOL is called (a crash
mid-episode), --hang-on TOOL never answers calls to TOOL, --fail-rewards answers reward requests with a 500.
GET /stats reports counts (live and peak environments, creates in flight and their peak, the arrival time of
every create request, calls answered and hung, reward requests, closed environment ids).
"""

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOOLS = [
    {
        "name": "list_files",
        "description": "List the files of the workspace, one path per line.",
        "parameters": {"type": "object", "properties": {}},
    },
    {
        "name": "read_file",
        "description": "Read a file of the workspace.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "the file's path"}},
            "required": ["path"],
        },
    },
    {
        "name": "write_file",
        "description": "Write (create or replace) a file of the workspace.",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "the file's path"},
                "content": {"type": "string", "description": "the file's new text"},
            },
            "required": ["path", "content"],
        },
    },
]


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.envs = {}  # env id -> {"episode_id", "files", "expect"}
        self.by_episode = {}  # episode id -> live env id (create is idempotent on it)
        self.create_requests = {}  # episode id -> create requests seen
        self.next_id = 0
        self.stats = {
            "live": 0,
            "max_live": 0,
            "creates": 0,
            "create_requests": 0,
            "creating": 0,
            "max_creating": 0,
            "create_times": [],
            "calls": 0,
            "hung": 0,
            "rewards": 0,
            "closed": [],
        }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, the body waits for the client's delayed ACK (~40 ms
    # per request on loopback). TCP_NODELAY sends it at once.
    disable_nagle_algorithm = True
    state = None  # set by main

    def log_message(self, fmt, *args):  # quiet: tests read stdout for the address only
        pass

    def reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if not raw:
            return {}
        return json.loads(raw)

    def do_GET(self):
        st = self.state
        if self.path == "/tools":
            return self.reply(200, {"service": "agentrt-reference-env 1", "tools": TOOLS})
        if self.path == "/stats":
            with st.lock:
                return self.reply(200, st.stats)
        self.reply(404, {"error": "no such endpoint: GET " + self.path})

    def do_POST(self):
        try:
            req = self.body()
        except ValueError as e:
            return self.reply(400, {"error": "the body is not JSON: %s" % e})
        parts = self.path.strip("/").split("/")
        if parts == ["create"]:
            return self.create(req)
        if len(parts) == 3 and parts[0] == "envs":
            env_id, op = parts[1], parts[2]
            if op == "call":
                return self.call(env_id, req)
            if op == "reward":
                return self.reward(env_id)
            if op == "close":
                return self.close(env_id)
        self.reply(404, {"error": "no such endpoint: POST " + self.path})

    def create(self, req):
        st = self.state
        episode = req.get("episode_id")
        if not isinstance(episode, str) or not episode:
            return self.reply(400, {"error": "episode_id is required"})
        meta = req.get("metadata") or {}
        if not isinstance(meta, dict):
            return self.reply(400, {"error": "metadata must be an object or null"})
        with st.lock:
            st.stats["create_requests"] += 1
            st.stats["create_times"].append(time.monotonic())
            seen = st.create_requests.get(episode, 0) + 1
            st.create_requests[episode] = seen
            st.stats["creating"] += 1
            st.stats["max_creating"] = max(st.stats["max_creating"], st.stats["creating"])
        try:
            if seen <= st.args.fail_creates:
                return self.reply(503, {"error": "sandbox pool exhausted (injected failure %d)" % seen})
            if st.args.create_delay:
                time.sleep(st.args.create_delay)
            with st.lock:
                env_id = st.by_episode.get(episode)
                if env_id is None:  # a retried create finds the environment the first one made
                    st.next_id += 1
                    env_id = "env-%d" % st.next_id
                    st.envs[env_id] = {
                        "episode_id": episode,
                        "files": dict(meta.get("files") or {}),
                        "expect": meta.get("expect"),
                    }
                    st.by_episode[episode] = env_id
                    st.stats["creates"] += 1
                    st.stats["live"] += 1
                    st.stats["max_live"] = max(st.stats["max_live"], st.stats["live"])
            return self.reply(200, {"env_id": env_id})
        finally:
            with st.lock:
                st.stats["creating"] -= 1

    def call(self, env_id, req):
        st = self.state
        name, args = req.get("name"), req.get("arguments") or {}
        if name == st.args.exit_on:
            os._exit(3)
        if name == st.args.hang_on:
            with st.lock:
                st.stats["hung"] += 1
            time.sleep(3600)
        with st.lock:
            env = st.envs.get(env_id)
            if env is None:
                return self.reply(404, {"error": "no environment %s" % env_id})
            st.stats["calls"] += 1
            files = env["files"]
            if name == "list_files":
                return self.reply(200, {"content": "\n".join(sorted(files)), "is_error": False})
            if name == "read_file":
                path = args.get("path")
                if path not in files:
                    return self.reply(200, {"content": "no such file: %s" % path, "is_error": True})
                return self.reply(200, {"content": files[path], "is_error": False})
            if name == "write_file":
                path, content = args.get("path"), args.get("content")
                if not isinstance(path, str) or not isinstance(content, str):
                    return self.reply(200, {"content": "path and content must be strings", "is_error": True})
                files[path] = content
                return self.reply(200, {"content": "wrote %d bytes to %s" % (len(content), path), "is_error": False})
        self.reply(200, {"content": "unknown tool %s" % name, "is_error": True})

    def reward(self, env_id):
        st = self.state
        with st.lock:
            env = st.envs.get(env_id)
            if env is None:
                return self.reply(404, {"error": "no environment %s" % env_id})
            st.stats["rewards"] += 1
            if st.args.fail_rewards:
                return self.reply(500, {"error": "the grader crashed (injected failure)"})
            expect = env["expect"]
            if not expect:
                return self.reply(200, {"reward": None})
            ok = all(env["files"].get(p) == c for p, c in expect.items())
            return self.reply(200, {"reward": 1.0 if ok else 0.0})

    def close(self, env_id):
        st = self.state
        with st.lock:
            env = st.envs.pop(env_id, None)
            if env is None:
                return self.reply(404, {"error": "no environment %s" % env_id})
            st.by_episode.pop(env["episode_id"], None)
            st.stats["live"] -= 1
            st.stats["closed"].append(env_id)
        self.reply(200, {})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--fail-creates", type=int, default=0)
    ap.add_argument("--create-delay", type=float, default=0)
    ap.add_argument("--exit-on", default=None)
    ap.add_argument("--hang-on", default=None)
    ap.add_argument("--fail-rewards", action="store_true")
    args = ap.parse_args()
    Handler.state = State(args)
    srv = ThreadingHTTPServer((args.host, args.port), Handler)
    srv.daemon_threads = True
    print("listening http://%s:%d" % (args.host, srv.server_address[1]), flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
