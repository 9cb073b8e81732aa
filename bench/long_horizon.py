#!/usr/bin/env python3
"""The long-horizon benchmark's workload, CPU sampler and per-turn analysis (bench/long_horizon.sh drives it).

  gen      writes a variant's prompts (agentrt's prompt format) and the emulator's script (--policy scripted):
           every episode is 40 (or 30) scripted turns whose replies think for a drawn number of words and call a
           tool whose output size the reply chooses (read_document's `bytes`, or Python code printing that many
           bytes), so the context grows to the variant's target deterministically, on any client
  sample   samples a process's CPU time (every thread's /proc/PID/task/TID/schedstat, in ns, plus its reaped
           children's) about every 0.5 ms until the process exits, as "wall_ns cpu_ns" lines
  analyse  one record per turn from the emulator's request log (input length, bytes sent, the client's gap
           between the previous response and this request), the CPU samples (the client's CPU since the
           previous request: the emulator holds each request for its fixed latency, so the client is idle there and
           the sample in that window is the turn boundary) and, for agentrt, its own per-turn overhead_ms
  doc      prints read_document's text for an id and a size (the C tool's generator, ported: bench/tools/documents)

Stdlib only (the report with its plots is long_horizon_report.py, in the bench venv).
"""
import argparse
import json
import os
import random
import signal
import sys
import time

WORDS = ["the", "model", "reads", "a", "long", "document", "about", "tokens", "and", "cache", "each", "turn", "adds",
         "new", "context", "to", "prefix", "server", "request", "batch", "reply", "tool", "result", "grows", "with",
         "every", "step", "of", "agent", "loop", "data", "line"]
_M64 = (1 << 64) - 1


def doc_text(doc_id, n):
    """read_document's text (bench/tools/documents/documents.c, doc_text): n bytes of words drawn by an LCG seeded
    with FNV-1a 64 of the id, a newline after every twelfth word, never ending in white space."""
    h = 14695981039346656037
    for b in doc_id.encode():
        h = ((h ^ b) * 1099511628211) & _M64
    out, k, count = [], 0, 0
    while k < n:
        h = (h * 6364136223846793005 + 1442695040888963407) & _M64
        w = WORDS[(h >> 33) % 32]
        out.append(w)
        k += len(w)
        count += 1
        if k < n:
            out.append("\n" if count % 12 == 0 else " ")
            k += 1
    s = "".join(out)[:n]
    if s and s[-1] in " \n":
        s = s[:-1] + "."
    return s


# Variants. Sizes are drawn per turn index from the variant's name (every episode of a variant has the same sizes,
# so a turn index is a context length); texts differ per episode. Thinking is in words (about one Qwen3 token
# each), tool outputs in bytes (about 5.3 bytes a token).
VARIANTS = {
    # 40 turns to ~32k tokens: a long think (1-2k words) every 8th turn, short ones otherwise, 2-3 KB documents
    "grow32k": dict(turns=40, tool="read_document", big_every=8, big=(1000, 2000), small=(30, 80),
                    out_bytes=(2048, 3072), context_length=163840),
    # 40 turns to ~128k tokens: a long think (1.5-4k words) every other turn, 2-16 KB documents
    "grow128k": dict(turns=40, tool="read_document", big_every=2, big=(1500, 4000), small=(30, 80),
                     out_bytes=(2048, 16384), context_length=163840),
    # grow32k's shape with the CPython tool: each call's code (~600 bytes) prints the document (~40k tokens at the end)
    "python": dict(turns=40, tool="execute_python_code", big_every=8, big=(1000, 2000), small=(30, 80),
                   out_bytes=(2048, 3072), context_length=163840),
    # 30 one-calculator-call turns on a fixed context: ~2k tokens, and ~118k (a long first message): for profiles
    "flat2k": dict(turns=30, tool="calculator", base_words=1200, small=(30, 80), context_length=163840),
    "flat118k": dict(turns=30, tool="calculator", base_words=113000, small=(30, 80), context_length=163840),
}


def think(rng, words):
    return " ".join(rng.choice(WORDS) for _ in range(words))


def python_code(doc_id, n):
    """A short program that prints doc_text(doc_id, n): the generator itself, so the code stays small and the
    output is the document (the point is the CPython tool's cost and its output's size)."""
    return ("W = %r.split()\n"
            "h, M = 14695981039346656037, (1 << 64) - 1\n"
            "for b in %r.encode():\n"
            "    h = ((h ^ b) * 1099511628211) & M\n"
            "out, k, n = [], 0, 0\n"
            "while k < %d:\n"
            "    h = (h * 6364136223846793005 + 1442695040888963407) & M\n"
            "    w = W[(h >> 33) %% 32]\n"
            "    out.append(w)\n"
            "    k, n = k + len(w), n + 1\n"
            "    if k < %d:\n"
            "        out.append('\\n' if n %% 12 == 0 else ' ')\n"
            "        k += 1\n"
            "s = ''.join(out)[:%d]\n"
            "print(s[:-1] + '.' if s[-1] in ' \\n' else s)\n") % (" ".join(WORDS), doc_id, n, n, n)


def call(name, args):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"


def gen(a):
    v = VARIANTS[a.variant]
    sizes = random.Random("sizes-" + a.variant)
    plan = []  # per turn: (think words, output bytes)
    for t in range(v["turns"]):
        lo, hi = v["small"]
        if "big_every" in v and t % v["big_every"] == v["big_every"] - 1:
            lo, hi = v["big"]
        b = sizes.randint(*v["out_bytes"]) if "out_bytes" in v else 0
        plan.append((sizes.randint(lo, hi), b))
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "prompts.jsonl"), "w") as pf, open(os.path.join(a.out, "script.jsonl"), "w") as sf:
        for e in range(a.episodes):
            key = "%s-%d" % (a.variant, e)
            rng = random.Random(key)
            task = "[script:%s] " % key
            if v["tool"] == "calculator":
                task += ("Here are my notes:\n\n" + think(rng, v["base_words"]) +
                         "\n\nUse the calculator for each step, then tell me when you are done.")
            else:
                task += "Read the documents one by one, then tell me when you are done."
            replies = []
            for t, (words, nbytes) in enumerate(plan):
                thought = "<think>\n" + think(rng, words) + "\n</think>\n\n"
                if t == len(plan) - 1:
                    replies.append(thought + "I have gone through all %d steps. Done." % (len(plan) - 1))
                elif v["tool"] == "calculator":
                    replies.append(thought + call("calculator", {"expression": "%d*%d+%d" % (e + 3, t + 7, t)}))
                elif v["tool"] == "read_document":
                    replies.append(thought + call("read_document", {"id": "%s-t%d" % (key, t), "bytes": nbytes}))
                else:
                    replies.append(thought + call("execute_python_code", {"code": python_code("%s-t%d" % (key, t), nbytes)}))
            pf.write(json.dumps({"id": key, "prompt": task}) + "\n")
            sf.write(json.dumps({"key": key, "replies": replies}) + "\n")
    with open(os.path.join(a.out, "variant.json"), "w") as f:
        json.dump(dict(v, name=a.variant, episodes=a.episodes), f)


# --- CPU sampler -----------------------------------------------------------------------------------------------

def sample(a):
    pid, tick = a.pid, os.sysconf("SC_CLK_TCK")
    fds, dead, last = {}, 0, {}
    out = []
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    task_dir = "/proc/%d/task" % pid
    refresh = 0
    while not stop:
        try:
            now = time.time_ns()
            if now >= refresh:  # threads come and go: look again every 20 ms
                tids = set(os.listdir(task_dir))
                for tid in list(fds):
                    if tid not in tids:
                        os.close(fds.pop(tid))
                        dead += last.pop(tid, 0)
                for tid in tids - set(fds):
                    try:
                        fds[tid] = os.open("%s/%s/schedstat" % (task_dir, tid), os.O_RDONLY)
                    except FileNotFoundError:
                        pass
                refresh = now + 20_000_000
            total = dead
            for tid, fd in list(fds.items()):
                try:
                    v = int(os.pread(fd, 128, 0).split()[0])
                except (OSError, IndexError, ValueError):
                    os.close(fds.pop(tid))
                    dead += last.pop(tid, 0)
                    continue
                last[tid] = v
                total += v
            with open("/proc/%d/stat" % pid) as f:  # children reaped (a Python tool's subprocesses)
                st = f.read().rsplit(")", 1)[1].split()
            total += (int(st[14]) + int(st[15])) * 1_000_000_000 // tick
            out.append((now, total))
        except (FileNotFoundError, ProcessLookupError):
            break
        time.sleep(a.interval_us / 1e6)
    with open(a.out, "w") as f:
        for t, c in out:
            f.write("%d %d\n" % (t, c))


# --- per-turn analysis -----------------------------------------------------------------------------------------

def wall_ns(rfc3339):
    """RFC 3339 UTC with up to nanoseconds ("2026-11-26T12:00:00.123456789Z") to ns since the epoch."""
    import calendar
    s = rfc3339.rstrip("Z")
    base, _, frac = s.partition(".")
    return calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S")) * 1_000_000_000 + int((frac + "000000000")[:9])


def analyse(a):
    import bisect
    samples = []
    if a.cpu:
        for line in open(a.cpu):
            t, c = line.split()
            samples.append((int(t), int(c)))
    st = [s[0] for s in samples]
    overhead = {}
    if a.trajs:
        for line in open(a.trajs):
            if line.strip():
                tr = json.loads(line)
                for s in tr.get("segments") or []:
                    if not isinstance(s, dict):
                        break  # strands-sglang's [is_output, length]: no overhead of its own
                    info = s.get("info") or {}
                    if s.get("kind") == "response" and info.get("rid"):
                        overhead[info["rid"]] = 1000 * info.get("overhead_ms", 0)
    offset = None
    prev_seq, ep, turn = None, -1, 0
    prev_sent, prev_cpu = None, None
    out = open(a.out, "w")
    for line in open(a.log):
        r = json.loads(line)
        if r.get("path") != "/generate" or r.get("status") != 200:
            continue
        if offset is None:
            offset = wall_ns(r["recv_time"]) - r["recv_ns"]
        req, resp = r["request"], r["response"]
        ids, outs = req["input_ids"], resp["output_ids"]
        if prev_seq is not None and len(ids) >= len(prev_seq) and ids[:len(prev_seq)] == prev_seq:
            turn += 1
        else:
            ep, turn, prev_sent, prev_cpu = ep + 1, 0, None, None
        # the client waits while the emulator holds the request: the CPU counter there is the turn boundary
        lo, hi = offset + r["recv_ns"] + a.margin_ns, offset + r["sent_ns"] - a.margin_ns
        i, j = bisect.bisect_left(st, lo), bisect.bisect_right(st, hi)
        cpu = samples[(i + j - 1) // 2][1] if j > i else None
        rec = {"episode": ep, "turn": turn, "context": len(ids), "new_tokens": len(ids) - len(prev_seq or []) if turn else len(ids),
               "output_tokens": len(outs), "request_bytes": r.get("request_bytes"),
               "gap_us": (r["recv_ns"] - prev_sent) / 1000 if prev_sent is not None else None,
               "cpu_us": (cpu - prev_cpu) / 1000 if cpu is not None and prev_cpu is not None else None,
               "overhead_us": overhead.get(r.get("rid"))}
        out.write(json.dumps(rec) + "\n")
        prev_seq = ids + outs
        prev_sent, prev_cpu = r["sent_ns"], cpu
    out.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("--variant", required=True, choices=sorted(VARIANTS))
    g.add_argument("--episodes", type=int, required=True)
    g.add_argument("--out", required=True)
    s = sub.add_parser("sample")
    s.add_argument("--pid", type=int, required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--interval-us", type=int, default=500)
    n = sub.add_parser("analyse")
    n.add_argument("--log", required=True)
    n.add_argument("--cpu")
    n.add_argument("--trajs")
    n.add_argument("--out", required=True)
    n.add_argument("--margin-ns", type=int, default=300_000)
    d = sub.add_parser("doc")
    d.add_argument("id")
    d.add_argument("bytes", type=int)
    a = ap.parse_args()
    if a.cmd == "gen":
        gen(a)
    elif a.cmd == "sample":
        sample(a)
    elif a.cmd == "analyse":
        analyse(a)
    else:
        sys.stdout.write(doc_text(a.id, a.bytes))


if __name__ == "__main__":
    main()
