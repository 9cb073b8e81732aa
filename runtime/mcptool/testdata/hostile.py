"""A hostile MCP server over stdio (newline-delimited JSON-RPC, standard library only), for runtime/mcptool's tests.

Usage: hostile.py MODE PIDFILE
It answers the MCP handshake and tools/list (one tool, "poke") like any server, appends "PID GRANDCHILD_PID" to
PIDFILE when it starts, and misbehaves on tools/call by MODE:
  orphan   answers with a line that is not JSON (a protocol error, so the client drops the connection), and
           refuses to die: it ignores SIGTERM and stdin's end, and has started a grandchild that sleeps
  flood    answers with one 100 MB frame, written in 1 MiB pieces
  crash    exits at once (every start: a crash loop)
"""
import json
import os
import signal
import subprocess
import sys
import time

mode, pidfile = sys.argv[1], sys.argv[2]
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
with open(pidfile, "a") as f:
    f.write(f"{os.getpid()} {grandchild.pid}\n")
if mode == "orphan":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

out = sys.stdout.buffer


def send(msg):
    out.write(json.dumps(msg).encode() + b"\n")
    out.flush()


for line in sys.stdin.buffer:
    req = json.loads(line)
    method, rid = req.get("method"), req.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": req["params"]["protocolVersion"],
              "capabilities": {"tools": {}}, "serverInfo": {"name": "hostile", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [{"name": "poke", "description": "Misbehave.",
              "inputSchema": {"type": "object", "properties": {}}}]}})
    elif method == "tools/call":
        if mode == "orphan":
            out.write(b"this is not JSON-RPC\n")
            out.flush()
        elif mode == "flood":
            out.write(b'{"jsonrpc": "2.0", "id": %d, "result": {"content": [{"type": "text", "text": "' % rid)
            chunk = b"x" * (1 << 20)
            for _ in range(100):
                out.write(chunk)
            out.write(b'"}]}}\n')
            out.flush()
        elif mode == "crash":
            os._exit(3)
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "result": {}})

# stdin ended: a well-behaved server exits here; an orphan-maker does not.
while mode == "orphan":
    time.sleep(3600)
