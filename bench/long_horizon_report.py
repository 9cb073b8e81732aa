#!/usr/bin/env python3
"""Markdown report and plots of a bench/long_horizon.sh results folder (runs.jsonl, VARIANT-SYSTEM.turns.jsonl,
flat*.top.txt). Runs in the bench venv (matplotlib).

Per turn (turns after the first of an episode; the first renders the whole first prompt): cpu_us is the client
process's CPU since the previous request (its reaped children included), overhead_us agentrt's own measure of its
time per turn (TurnInfo.overhead_ms: everything but waiting on SGLang and on tools), gap_us the time the emulator
saw between sending a response and receiving the next request (tools included), request_bytes the body sent.
Turns are grouped by turn index (every episode of a variant has the same sizes, so a turn index is a context
length); each point is a group: the median context and the median (p50) or p99 of the metric.
"""
import argparse
import json
import os
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

GROW = ["grow32k", "grow128k", "python"]
FLAT = ["flat2k", "flat118k"]
GROUP = 4  # turns per point


def pct(xs, q):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def load(d, v, s):
    p = os.path.join(d, "%s-%s.turns.jsonl" % (v, s))
    if not os.path.exists(p):
        return None
    return [json.loads(l) for l in open(p) if l.strip()]


def groups(turns):
    """[(first turn, last turn, records)] by turn index, turn 0 left out."""
    by = defaultdict(list)
    for r in turns:
        if r["turn"] > 0:
            by[(r["turn"] - 1) // GROUP].append(r)
    return [(k * GROUP + 1, k * GROUP + GROUP, by[k]) for k in sorted(by)]


def series(turns, key, q):
    xs, ys = [], []
    for _, _, rs in groups(turns):
        y = pct([r[key] for r in rs], q)
        if y is not None:
            xs.append(pct([r["context"] for r in rs], 0.5) / 1000)
            ys.append(y)
    return xs, ys


def fmt(x, unit=""):
    if x is None:
        return "-"
    if x >= 100:
        return "{:,.0f}{}".format(x, unit)
    return "{:.1f}{}".format(x, unit)


def band(turns, key, q, which):
    gs = groups(turns)
    if not gs:
        return None
    return pct([r[key] for r in (gs[0] if which == "first" else gs[-1])[2]], q)


def ratio(a, b):
    return "{:.2f}x".format(b / a) if a and b else "-"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--plots", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--notes", help="hand-written findings (markdown) put after the tables, if the file exists")
    a = ap.parse_args()
    runs = [json.loads(l) for l in open(os.path.join(a.dir, "runs.jsonl")) if l.strip()]
    data = {(r["variant"], r["system"]): load(a.dir, r["variant"], r["system"]) for r in runs}
    load_before = open(os.path.join(a.dir, "load-before.txt")).read().strip()
    load_after = open(os.path.join(a.dir, "load-after.txt")).read().strip()

    L = []
    w = L.append
    w("# Long-horizon episodes: per-turn cost against the context length")
    w("")
    w("```sh")
    w("source ~/.cache/agentrt/env.sh")
    w(a.command)
    w("```")
    w("")
    w("Load average before: `%s`; after: `%s`." % (load_before, load_after))
    w("")
    w("Workload (`bench/long_horizon.py gen`): Qwen3 with thinking on, Hermes tool calls, the emulator's scripted "
      "policy (`agentrt emulate --policy scripted`, fixed latency per request), one episode at a time (C=1). Every "
      "turn's reply is a `<think>` block (30-80 words, and 1-4k words on some turns) and one tool call: "
      "`read_document` (bench/tools/documents: a C plugin in agentrt, the same text generator in Python on the "
      "strands side) returns the 2-16 KB the reply asks for; in `python` the CPython tool prints it (agentrt: "
      "CPython WASI in-process; strands: a `python3 -I -c` subprocess, whose CPU is counted as the client's); "
      "`flat*` are 30 calculator turns on a fixed context. Every trajectory is checked against the emulator's log "
      "(`check.py`), and the strands-sglang trajectories must be token-identical to agentrt's.")
    w("")
    w("Per turn (turns after the first): **CPU** is the client process's CPU time since its previous request "
      "(sampled from `/proc/PID/task/*/schedstat` about every 0.5 ms; the emulator holds each request for its "
      "latency, the client is idle then, and the sample there is the turn's boundary), **overhead** agentrt's own "
      "measure (`overhead_ms`: all but waiting on SGLang and on tools), **gap** what the emulator sees between its "
      "response and the next request (tools included), **bytes** the /generate body sent. First and last: the first "
      "and last %d-turn group of the episodes; growth: last / first." % GROUP)
    w("")
    w("| variant | system | episodes | context first → last (tokens) | CPU µs/turn p50 first → last (growth) | "
      "overhead p50 first → last (growth) | overhead p99 first → last | gap p50 first → last (growth) | bytes/turn first → last | identical |")
    w("|---|---|---:|---|---|---|---|---|---|---|")
    for r in runs:
        t = data.get((r["variant"], r["system"]))
        if not t or not r["ok"]:
            w("| %s | %s | %s | FAILED | | | | | | |" % (r["variant"], r["system"], r["episodes"]))
            continue
        c0, c1 = band(t, "context", 0.5, "first"), band(t, "context", 0.5, "last")
        cp0, cp1 = band(t, "cpu_us", 0.5, "first"), band(t, "cpu_us", 0.5, "last")
        o0, o1 = band(t, "overhead_us", 0.5, "first"), band(t, "overhead_us", 0.5, "last")
        p0, p1 = band(t, "overhead_us", 0.99, "first"), band(t, "overhead_us", 0.99, "last")
        g0, g1 = band(t, "gap_us", 0.5, "first"), band(t, "gap_us", 0.5, "last")
        b0, b1 = band(t, "request_bytes", 0.5, "first"), band(t, "request_bytes", 0.5, "last")
        ident = "" if r.get("identical_to_agentrt") is None else "%d/%d" % (r["identical_to_agentrt"], r["episodes"])
        w("| %s | %s | %d | %s → %s | %s → %s (%s) | %s → %s (%s) | %s → %s | %s → %s (%s) | %s → %s | %s |" % (
            r["variant"], r["system"], r["episodes"], fmt(c0), fmt(c1), fmt(cp0), fmt(cp1), ratio(cp0, cp1),
            fmt(o0), fmt(o1), ratio(o0, o1), fmt(p0), fmt(p1), fmt(g0), fmt(g1), ratio(g0, g1), fmt(b0), fmt(b1), ident))
    w("")
    w("Whole runs (C=1, the emulator's latency included in the wall time):")
    w("")
    w("| variant | system | episodes | turns | wall s | CPU s | CPU ms / episode |")
    w("|---|---|---:|---:|---:|---:|---:|")
    for r in runs:
        if r["ok"] and r.get("cpu_s"):
            w("| %s | %s | %d | %d | %.1f | %.2f | %s |" % (r["variant"], r["system"], r["episodes"], r["turns"],
                                                        r["wall_s"], r["cpu_s"], fmt(1000 * r["cpu_s"] / r["episodes"])))
    w("")

    # plots
    colors = {"agentrt": "tab:blue", "strands": "tab:orange"}
    styles = {"grow32k": "-o", "grow128k": "-s", "python": ":^", "flat2k": "x", "flat118k": "x"}
    made = []
    for name, key, title, logy in [("cpu", "cpu_us", "client CPU per turn, µs (p50)", True),
                                   ("overhead", "overhead_us", "agentrt overhead per turn, µs", True),
                                   ("gap", "gap_us", "gap between response and next request, µs (p50)", True),
                                   ("bytes", "request_bytes", "bytes sent per /generate request (p50)", False)]:
        fig, ax = plt.subplots(figsize=(8, 4.8))
        any_line = False
        for (v, s), t in sorted(data.items()):
            if not t or v not in GROW + FLAT:
                continue
            qs = [(0.5, "p50")] + ([(0.99, "p99")] if key == "overhead_us" else [])
            for q, qn in qs:
                xs, ys = series(t, key, q)
                if not xs:
                    continue
                style = styles[v] if qn == "p50" else "--" + styles[v][-1]
                ax.plot(xs, ys, style, color=colors.get(s, "k"), label="%s %s%s" % (s, v, "" if len(qs) == 1 else " " + qn),
                        markersize=4)
                any_line = True
        if not any_line:
            plt.close(fig)
            continue
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel("context (k tokens)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(a.plots, "long-horizon-%s.png" % name)
        fig.savefig(path, dpi=90)
        plt.close(fig)
        made.append(os.path.basename(path))
    if made:
        for m in made:
            w("![%s](%s)" % (m, m))
        w("")

    if a.notes and os.path.exists(a.notes):
        w(open(a.notes).read().rstrip())
        w("")

    flat = [(v, data.get((v, "agentrt"))) for v in FLAT if data.get((v, "agentrt"))]
    if flat:
        w("## Fixed context: agentrt at ~2k and ~118k tokens")
        w("")
        w("| variant | context (tokens) | CPU µs/turn p50 | overhead p50 / p99 µs | gap p50 µs | bytes/turn |")
        w("|---|---:|---:|---:|---:|---:|")
        for v, t in flat:
            rs = [r for r in t if r["turn"] > 0]
            w("| %s | %s | %s | %s / %s | %s | %s |" % (v, fmt(pct([r["context"] for r in rs], 0.5)),
                                                   fmt(pct([r["cpu_us"] for r in rs], 0.5)),
                                                   fmt(pct([r["overhead_us"] for r in rs], 0.5)),
                                                   fmt(pct([r["overhead_us"] for r in rs], 0.99)),
                                                   fmt(pct([r["gap_us"] for r in rs], 0.5)),
                                                   fmt(pct([r["request_bytes"] for r in rs], 0.5))))
        w("")
        for f, title in [("flat2k.top.txt", "~2k context"), ("flat118k.top.txt", "~118k context"),
                         ("flat-diff.top.txt", "what ~118k adds over ~2k (`-diff_base`, same number of turns)")]:
            p = os.path.join(a.dir, f)
            if os.path.exists(p):
                w("`go tool pprof -top -cum -ignore 'firstPrompt|episode..end|runRun.func'` (per-turn work: what an "
                  "episode does once left out), %s:" % title)
                w("")
                w("```")
                w(open(p).read().rstrip())
                w("```")
                w("")
    os.makedirs(os.path.dirname(os.path.abspath(a.report)), exist_ok=True)
    with open(a.report, "w") as f:
        f.write("\n".join(L) + "\n")


if __name__ == "__main__":
    main()
