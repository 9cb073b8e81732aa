#!/usr/bin/env python3
"""Independent checker of trajectories against an `agentrt emulate --log` request log (stdlib only).

Works for agentrt's trajectories (`agentrt run --out`) and for strands-sglang's (bench/strands_driver.py): each
trajectory's turns are found in the log by content, not by request id (strands-sglang sets none), so the same
check applies to both. For every trajectory it verifies:

  aligned     token_ids, loss_mask and logprobs have one entry per token; segments tile the trajectory and
              loss_mask is 1 exactly on response segments (0 on a sample marked "masked");
  verbatim    for each response segment, the log holds a /generate request whose input_ids are the trajectory
              up to that segment and whose output_ids are the segment, and that assistant message's text is the
              response text as the server sent it (with --model: or, where the server's text left out special
              tokens, as gpt-oss's harmony markup, the model's tokenizer's decode of output_ids with special tokens
              kept, less a final special token, the stop); response logprobs are the server's
              output_token_logprobs;
  prefix      consequently each request of an episode extends the previous request + its output, and the final
              trajectory is the last request's input_ids + output_ids; every logged /generate request is claimed
              by exactly one trajectory turn (no hidden retries or lost turns);
  logprobs    logprobs[0] is null, the first prompt's are all null (agentrt asks for none on turn 0) or all
              real, and every other position equals the emulator's scoring function
              Logprob(traj[max(0,p-3):p], traj[p]) (sglang/emulator/logprob.go), bit for bit.

A multi-sample trajectory (agentrt's "samples": an episode whose context was compacted, or that ran sub-agents) is
checked sample by sample: each sample is a chain checked as above (every logged request still claimed by exactly one
turn of one sample), the samples' first_turn count the turns of their episode (the top-level one, or the sub-agent
episode a sample names in "episode"), a parent is an earlier sample of the same episode (a sub-agent episode's first
sample, reason "subagent": a later sample one level up), and with --model DIR each sample's first prompt but the
top-level episode's first must equal the chat template's full render of its messages[:prompt_messages] with its
tools (the sample's "tools", else the trajectory's) and the trajectory's chat_template_kwargs, as
transformers' apply_chat_template writes it and the model's tokenizer encodes it (the reference libraries, not
agentrt's renderer; needs transformers).

It also reports per-turn client overhead (time from the emulator sending turn t's response to receiving turn
t+1's request of the same episode, from the log's sent_ns/recv_ns) and, with --compare, whether two trajectory
files hold identical (token_ids, loss_mask, logprobs) per id (the first prompt's logprobs left out: agentrt asks
for none).

usage: check.py --log EMU_LOG --trajs FILE [--compare OTHER_FILE] [--system NAME] [--model DIR]
Prints one JSON object; exit status 1 if any check fails (the first few failures are listed).
"""
import argparse
import json
import sys
from collections import defaultdict

_FNV_OFF = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_M64 = 0xFFFFFFFFFFFFFFFF


def logprob(prefix, tid):
    """The emulator's scoring function, ported from sglang/emulator/logprob.go."""
    h = _FNV_OFF
    for x in list(prefix[-3:]) + [tid]:
        for b in (x & 0xFFFFFFFF).to_bytes(4, "little"):
            h = ((h ^ b) * _FNV_PRIME) & _M64
    u = (h >> 11) * 2.0 ** -53
    return -10.0 * u * u * u


def percentile(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(q / 100.0 * (len(xs) - 1)))))]


def turn_key(input_ids, output_ids):
    """A request's identity: its lengths and the hashes of its input and output ids (a long-horizon log holds
    millions of ids, too many to keep as tuples)."""
    return len(input_ids), hash(tuple(input_ids)), len(output_ids), hash(tuple(output_ids))


def load_log(path):
    """/generate records (status 200, no fault), indexed by turn_key(input_ids, output_ids); each keeps what the
    checks read (rid, times, the response's text and output logprobs)."""
    index = defaultdict(list)
    n = 0
    for line in open(path):
        r = json.loads(line)
        if r.get("path") != "/generate":
            continue
        if r.get("status") != 200 or r.get("fault"):
            continue
        req, resp = r.get("request") or {}, r.get("response") or {}
        if isinstance(resp, list) or isinstance(req.get("input_ids"), list) and req["input_ids"] and \
                isinstance(req["input_ids"][0], list):
            raise SystemExit(f"check: {path}: batched /generate requests are not supported (seq {r.get('seq')})")
        key = turn_key(req.get("input_ids") or (), resp.get("output_ids") or ())
        olp = (resp.get("meta_info") or {}).get("output_token_logprobs")
        index[key].append({"rid": r.get("rid"), "recv_ns": r["recv_ns"], "sent_ns": r["sent_ns"],
                           "text": resp.get("text"), "olp": None if olp is None else [e[0] for e in olp]})
        n += 1
    return index, n


def normalise(t, skip=0):
    """(responses [(offset, length)], assistant texts, rids or None) for either system's trajectory; skip leaves out
    the first messages (a later sample's prompt messages: kept turns, rendered, not generated in this sample)."""
    segs, out, rids = t.get("segments") or [], [], []
    if segs and isinstance(segs[0], dict):  # agentrt
        off = 0
        for s in segs:
            if s["offset"] != off:
                raise ValueError(f"segment at {s['offset']} does not start where the previous ended ({off})")
            if s["kind"] == "response":
                out.append((s["offset"], s["length"]))
                rids.append((s.get("info") or {}).get("rid"))
            elif s["kind"] != "prompt":
                raise ValueError(f"segment kind {s['kind']!r}")
            off += s["length"]
        texts = [m.get("content") for m in (t.get("messages") or [])[skip:] if m.get("role") == "assistant"]
    else:  # strands-sglang: [is_output, length]
        off = 0
        for is_output, length in segs:
            if is_output:
                out.append((off, length))
            off += length
        rids = None
        texts = []
        for m in t.get("messages") or []:
            if m.get("role") == "assistant":
                blocks = [c["text"] for c in m.get("content") or [] if "text" in c]
                texts.append(blocks[0] if blocks else None)
    if off != len(t["token_ids"]):
        raise ValueError(f"segments cover {off} tokens, the trajectory has {len(t['token_ids'])}")
    return out, texts, rids


def check_one(t, index, used, skip=0, renderer=None):
    """Checks one chain (a trajectory, or one sample of a multi-sample one); returns (list of (recv_ns, sent_ns) per
    turn). Raises ValueError on a failure."""
    ids, mask, lps = t["token_ids"], t["loss_mask"], t["logprobs"]
    if not (len(ids) == len(mask) == len(lps)):
        raise ValueError(f"lengths differ: token_ids {len(ids)}, loss_mask {len(mask)}, logprobs {len(lps)}")
    if not ids:
        raise ValueError("empty trajectory")
    responses, texts, rids = normalise(t, skip)
    if not responses:
        raise ValueError("no response segment")
    want_mask = [0] * len(ids)
    on = 0 if t.get("masked") else 1  # a summary sample of an agent with mask_summary: responses not trained on
    for off, n in responses:
        want_mask[off:off + n] = [on] * n
    if list(mask) != want_mask:
        p = next(i for i in range(len(ids)) if mask[i] != want_mask[i])
        raise ValueError(f"loss_mask[{p}] = {mask[p]}, segments say {want_mask[p]}")
    if responses[-1][0] + responses[-1][1] != len(ids):
        raise ValueError("trajectory does not end with a response (final trajectory != last input_ids + output_ids)")
    if lps[0] is not None:
        raise ValueError(f"logprobs[0] = {lps[0]!r}, want null")
    # agentrt asks for no logprobs of the first prompt (logprob_start_len -1 keeps SGLang's radix match), so
    # they are null; a system that asks for them must have the real ones.
    first = responses[0][0]
    firstnull = all(x is None for x in lps[1:first])
    for p in range(1, len(ids)):
        if p < first and firstnull:
            continue
        want = logprob(ids[max(0, p - 3):p], ids[p])
        if lps[p] != want:
            raise ValueError(f"logprobs[{p}] = {lps[p]!r}, the emulator's scoring function gives {want!r}")
    if len(texts) < len(responses):
        raise ValueError(f"{len(responses)} response segments but {len(texts)} assistant messages")
    times = []
    for k, (off, n) in enumerate(responses):
        key = turn_key(ids[:off], ids[off:off + n])
        recs = index.get(key)
        if not recs or used[key] >= len(recs):
            raise ValueError(f"turn {k}: no logged /generate request with input_ids = trajectory[:{off}] and "
                             f"output_ids = trajectory[{off}:{off + n}]")
        r = recs[used[key]]
        used[key] += 1
        if texts[k] != r["text"] and (renderer is None or texts[k] != renderer.response_text(ids[off:off + n])):
            raise ValueError(f"turn {k}: assistant message text differs from the response text the server sent")
        if r["olp"] is not None and r["olp"] != list(lps[off:off + n]):
            raise ValueError(f"turn {k}: response logprobs differ from the server's output_token_logprobs")
        if rids is not None and rids[k] is not None and r.get("rid") != rids[k]:
            # identical requests may exist for identical samples; only a content-and-rid match is a failure
            alt = [x for x in recs if x.get("rid") == rids[k]]
            if not alt:
                raise ValueError(f"turn {k}: segment rid {rids[k]!r} not in the log for this request")
        times.append((r["recv_ns"], r["sent_ns"]))
    return times


class Renderer:
    """The reference render of a sample's prompt: transformers' apply_chat_template and the model's tokenizer."""

    def __init__(self, model):
        from transformers import AutoTokenizer  # only with --model
        self.tok = AutoTokenizer.from_pretrained(model)
        self.special = {i for i, t in self.tok.added_tokens_decoder.items() if t.special}

    def ids(self, messages, tools, kwargs):
        text = self.tok.apply_chat_template(messages, tools=tools or None, add_generation_prompt=True, tokenize=False,
                                            **(kwargs or {}))
        return self.tok.encode(text, add_special_tokens=False)

    def response_text(self, out):
        """A response's text as agentrt records it: decoded with special tokens kept, less a final special token
        (the stop token). The server's text skips special tokens (SGLang's default), which for gpt-oss leaves out
        the harmony markup between its messages."""
        out = list(out)
        if out and out[-1] in self.special:
            out = out[:-1]
        return self.tok.decode(out, skip_special_tokens=False)


def check_samples(t, index, used, renderer):
    """Checks every sample of a multi-sample trajectory; returns the turns' times and the number of samples."""
    samples = t["samples"]
    if len(samples) < 2:
        raise ValueError(f"{len(samples)} samples listed: a one-sample episode is written without \"samples\"")
    last = samples[-1]
    for k in ("token_ids", "loss_mask", "segments"):
        if last[k] != t[k]:
            raise ValueError(f"the last sample's {k} is not the trajectory's")
    times, turns = [], {}  # turns per episode ("" the top-level one)
    if last.get("episode"):
        raise ValueError("the last sample belongs to a sub-agent episode, not the top-level one")
    for k, s in enumerate(samples):
        if s.get("index") != k:
            raise ValueError(f"sample {k} has index {s.get('index')!r}")
        ep, depth, parent = s.get("episode", ""), s.get("depth", 0), s.get("parent", -1)
        if (ep == "") != (depth == 0):
            raise ValueError(f"sample {k}: episode {ep!r} at depth {depth!r}")
        if s.get("first_turn") != turns.get(ep, 0):
            raise ValueError(f"sample {k}: first_turn {s.get('first_turn')!r}, the samples of its episode before it "
                             f"have {turns.get(ep, 0)} turns")
        first = ep not in turns
        if first and ep == "":
            if parent != -1:
                raise ValueError(f"sample {k}: the episode's first sample has parent {parent!r}")
        elif first:
            if s.get("reason") != "subagent" or not (k < parent < len(samples)) or samples[parent].get("depth", 0) != depth - 1:
                raise ValueError(f"sample {k}: sub-agent episode {ep!r}'s first sample: reason {s.get('reason')!r}, "
                                 f"parent {parent!r} (want \"subagent\", a later sample one level up)")
        elif not (0 <= parent < k) or samples[parent].get("episode", "") != ep or s.get("reason") == "subagent":
            raise ValueError(f"sample {k}: parent {parent!r} is not an earlier sample of its episode")
        pm = s.get("prompt_messages", 0)
        try:
            times.extend(check_one(s, index, used, skip=pm, renderer=renderer))
        except ValueError as e:
            raise ValueError(f"sample {k}: {e}") from None
        turns[ep] = turns.get(ep, 0) + sum(1 for g in s["segments"] if g["kind"] == "response")
        if not (ep == "" and parent == -1) and renderer is not None:
            want = renderer.ids(s["messages"][:pm], s.get("tools") or t.get("tools"), t.get("chat_template_kwargs"))
            first = s["segments"][0]["length"]
            if list(s["token_ids"][:first]) != list(want):
                p = next((i for i in range(min(first, len(want))) if s["token_ids"][i] != want[i]), min(first, len(want)))
                raise ValueError(f"sample {k}: the first prompt ({first} tokens) is not the template's full render of "
                                 f"its {pm} prompt messages ({len(want)} tokens; they differ first at {p})")
    return times, len(samples)


def main():
    ap = argparse.ArgumentParser(description="check trajectories against an emulator request log")
    ap.add_argument("--log", required=True)
    ap.add_argument("--trajs", required=True)
    ap.add_argument("--compare")
    ap.add_argument("--system", default="")
    ap.add_argument("--model", help="model folder: check each later sample's prompt against transformers' render")
    a = ap.parse_args()
    renderer = Renderer(a.model) if a.model else None

    index, logged = load_log(a.log)
    used = defaultdict(int)
    failures, status, gaps, turns, n, samples, rendered = [], defaultdict(int), [], 0, 0, 0, 0
    for lineno, line in enumerate(open(a.trajs), 1):
        if not line.strip():
            continue
        t = json.loads(line)
        n += 1
        st = t.get("status", "")
        status[st if not st.startswith("error") else "error"] += 1
        if st not in ("completed", "truncated"):
            failures.append(f"{a.trajs}:{lineno} ({t.get('id')}): status {st!r}")
            continue
        try:
            if "samples" in t:
                times, k = check_samples(t, index, used, renderer)
                samples += k
                rendered += k - 1 if renderer is not None else 0
            else:
                times = check_one(t, index, used, renderer=renderer)
                samples += 1
        except ValueError as e:
            failures.append(f"{a.trajs}:{lineno} ({t.get('id')}): {e}")
            continue
        turns += len(times)
        # a turn gap spans a compaction too (the gap then includes rendering the new sample's prompt)
        gaps.extend((times[k + 1][0] - times[k][1]) / 1000.0 for k in range(len(times) - 1))
    unclaimed = logged - sum(used.values())
    if unclaimed and not failures:
        failures.append(f"{unclaimed} logged /generate requests belong to no trajectory turn")
    same = None
    if a.compare:
        def key(t):
            # agentrt asks for no logprobs of the first prompt (strands-sglang does): compare from the first response
            first = normalise(t)[0][0][0] if normalise(t)[0] else 0
            return (t["token_ids"], t["loss_mask"], [None] * first + list(t["logprobs"][first:]))

        other = {}
        for line in open(a.compare):
            if line.strip():
                o = json.loads(line)
                other[o["id"]] = key(o)
        same = 0
        for line in open(a.trajs):
            if line.strip():
                t = json.loads(line)
                if other.get(t["id"]) == key(t):
                    same += 1
    res = {"system": a.system, "ok": not failures, "trajectories": n, "samples": samples,
           "renders_checked": rendered, "status": dict(status), "turns": turns,
           "logged_requests": logged, "failures": len(failures), "first_failures": failures[:5],
           "turn_gap_us": {"n": len(gaps), "p50": percentile(gaps, 50), "p90": percentile(gaps, 90),
                           "p99": percentile(gaps, 99), "mean": round(sum(gaps) / len(gaps), 1) if gaps else None}}
    if same is not None:
        res["identical_to_compare"] = same
    print(json.dumps(res))
    sys.exit(0 if not failures else 1)


if __name__ == "__main__":
    main()
