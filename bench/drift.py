#!/usr/bin/env python3
"""The cost of drift: what a text-based (OpenAI-style) client would have trained on.

An OpenAI-style client never sees token ids: it gets the reply as text (with tool calls parsed out) and, to build
a training sequence, renders the conversation with the chat template and encodes it. For each of agentrt's
trajectories (token-exact: the ids the server generated), this does exactly that with the Hugging Face libraries
(transformers.AutoTokenizer, offline) and reports the fraction whose re-tokenized ids differ from the generated
ones, split by cause:

  text      whether the rendered text equals the generated text once empty think blocks after
            "<|im_start|>assistant\n" are removed from both (what explains render differences at rate 0 for Qwen3);
  render    the conversation rendered with the chat template (system prompt, tools, messages with the assistant's
            text content and its tool_calls, tool results) and encoded; the trailing newline after the last
            <|im_end|> is dropped, since the trajectory ends at the model's stop token;
  reencode  only the replies: encode(decode(output_ids)) != output_ids for some response segment (non-canonical
            tokenization by the model; the emulator's --noncanonical-rate sets how often).

usage: drift.py --model DIR --trajs FILE [--rate R]   (prints one JSON line)
"""
import argparse
import json
import os
import re
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
from transformers import AutoTokenizer  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strands_driver import CALCULATOR_SPEC  # noqa: E402

TOOLS = [{"type": "function", "function": {"name": CALCULATOR_SPEC["name"], "description": CALCULATOR_SPEC["description"],
                                           "parameters": CALCULATOR_SPEC["inputSchema"]["json"]}}]
THINK = "<|im_start|>assistant\n<think>\n\n</think>\n\n"
CALL = re.compile(r"\s*<tool_call>.*?</tool_call>\s*", re.S)


def openai_messages(msgs):
    """agentrt's trajectory messages as an OpenAI-style client holds them: tool calls parsed out of the text."""
    out = []
    last = max((i for i, m in enumerate(msgs) if m["role"] == "assistant"), default=len(msgs) - 1)
    for m in msgs[:last + 1]:  # the trajectory ends at the last reply (a limiter stop may log a later tool result)
        if m["role"] == "assistant":
            o = {"role": "assistant", "content": CALL.sub("", m.get("content") or "").strip()}
            if m.get("tool_calls"):
                o["tool_calls"] = [{"id": c.get("id"), "type": "function",
                                    "function": {"name": c["function"]["name"],
                                                 "arguments": c["function"]["arguments"]}} for c in m["tool_calls"]]
            out.append(o)
        elif m["role"] == "tool":
            out.append({"role": "tool", "content": m.get("content") or "", "tool_call_id": m.get("tool_call_id")})
        else:
            out.append({"role": m["role"], "content": m.get("content") or ""})
    return out


def main():
    ap = argparse.ArgumentParser(description="re-tokenization drift of a text path")
    ap.add_argument("--model", required=True)
    ap.add_argument("--trajs", required=True)
    ap.add_argument("--rate", default="")
    a = ap.parse_args()
    tok = AutoTokenizer.from_pretrained(a.model)
    n = render_diff = reencode_diff = either = text_same_mod_think = 0
    diff_tokens = 0
    audited_by_agentrt = 0
    for line in open(a.trajs):
        if not line.strip():
            continue
        t = json.loads(line)
        n += 1
        ids = t["token_ids"]
        text = tok.apply_chat_template(openai_messages(t["messages"]), tools=TOOLS, tokenize=False,
                                       add_generation_prompt=False, enable_thinking=False)
        if text.endswith("\n"):
            text = text[:-1]
        re_ids = tok.encode(text, add_special_tokens=False)
        d_render = re_ids != ids
        gen_text = tok.decode(ids)
        if gen_text.replace(THINK, "<|im_start|>assistant\n") == text.replace(THINK, "<|im_start|>assistant\n"):
            text_same_mod_think += 1
        d_re = False
        for s in t["segments"]:
            if s["kind"] == "response":
                out = ids[s["offset"]:s["offset"] + s["length"]]
                if tok.encode(tok.decode(out), add_special_tokens=False) != out:
                    d_re = True
        if d_render:
            render_diff += 1
            k = next((i for i in range(min(len(ids), len(re_ids))) if ids[i] != re_ids[i]), min(len(ids), len(re_ids)))
            diff_tokens += max(len(ids), len(re_ids)) - k
        reencode_diff += d_re
        either += d_render or d_re
        audited_by_agentrt += (t.get("drift") or {}).get("drifted", 0) > 0
    print(json.dumps({"rate": a.rate, "trajectories": n, "render_differs": render_diff,
                      "render_differs_frac": render_diff / max(n, 1), "reencode_differs": reencode_diff,
                      "reencode_differs_frac": reencode_diff / max(n, 1), "either_frac": either / max(n, 1),
                      "tokens_after_first_difference": diff_tokens,
                      "text_same_except_empty_think_frac": text_same_mod_think / max(n, 1),
                      "agentrt_drift_audit_flagged": audited_by_agentrt}))


if __name__ == "__main__":
    main()
