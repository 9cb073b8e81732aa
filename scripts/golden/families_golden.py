#!/usr/bin/env python3
"""Golden renders of the chat templates of every supported model family, from real transformers.

Run with the golden venv (scripts/requirements-golden.txt), offline:

    source ~/.cache/agentrt/env.sh
    $AGENTRT_GOLDEN_PYTHON scripts/golden/families_golden.py

Inputs: tito/testdata/families/<family>/{chat_template.jinja,tokenizer_config.json} (the families' public chat
templates and special tokens; families.json there says where each came from, the extra stop tokens and the
chat_template_kwargs variants). For every family and variant it renders an agent-RL corpus (tools, several tool
rounds, reasoning, thinking on/off, unicode, code, JSON in strings, empty and null content, multiple tool calls)
with transformers' apply_chat_template(..., tokenize=False) on a tokenizer carrying the family's template and
special tokens, and writes tito/testdata/families/golden/<family>.json:

  render: the inputs, and the text (or, where transformers raises, the exception type and message);
  delta:  a history ending with the model's turn and the new messages after it: the full render of history + new
          (with the generation prompt) and the expected delta, the tail of that render after the history's end.

The history's end in the full render is where the history's own render ends, up to and including its last stop
token (the separator after it belongs to the delta); when the template writes no stop token after the model's turn
(GLM: the model's stop token starts the next message) the history ends where its render ends. Templates that
re-render the history once more messages follow (Qwen3 drops old reasoning) have the end located by the new
message instead: the full render is cut before the header of the first new message, found by rendering again
with a marker after that message's content ("rewrites_history": true in the case).

Nothing here is hand-edited; rerun the script to regenerate.
"""

import copy
import datetime
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import jinja2  # noqa: E402
import tokenizers  # noqa: E402
import transformers  # noqa: E402
import transformers.utils.chat_template_utils  # noqa: E402
from tokenizers.models import WordLevel  # noqa: E402
from transformers import PreTrainedTokenizerFast  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from template_golden import STRESS, TOOLS, call  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = ROOT / "tito" / "testdata" / "families"
OUT = FAMILIES / "golden"
MARK = "\u2063agentrt-delta-probe"

# strftime_now's clock, frozen so that the goldens do not depend on the day they are made (Mistral, Llama 3.2,
# Granite and gpt-oss print today's date). tito/families_golden_test.go renders with the same date (goldenNow).
NOW = datetime.datetime(2026, 11, 24, 12, 0, 0)


class _FrozenDatetime(datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return NOW


transformers.utils.chat_template_utils.datetime = _FrozenDatetime

# Tools with plain parameter types only (Hermes 3's template recurses forever on a list-valued "type").
SIMPLE_TOOLS = [
    {"type": "function", "function": {"name": name, "description": desc, "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name"}, "days": {"type": "integer"}, "query": {"type": "string"}}, "required": []}}}
    for name, desc in (("get_weather", "Get the weather."), ("search", "Search the web."))
]


def tokenizer_for(family):
    cfg = json.loads((FAMILIES / family / "tokenizer_config.json").read_text())
    special = {}
    for k in ("bos_token", "eos_token", "pad_token", "unk_token"):
        v = cfg.get(k)
        if isinstance(v, dict):
            v = v.get("content")
        if v:
            special[k] = v
    vocab = {t: i for i, t in enumerate(sorted(set(special.values()) | {"[UNK0]"}))}
    backend = tokenizers.Tokenizer(WordLevel(vocab, unk_token="[UNK0]"))
    tpl = (FAMILIES / family / "chat_template.jinja").read_text()
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, chat_template=tpl, **special)
    return tok, special


def corpus():
    sys_msg = {"role": "system", "content": "You are a helpful assistant. Réponds en français si on te parle français."}
    user1 = {"role": "user", "content": "What's the weather in Paris and in 東京? Also search for 'best café'."}
    asst_calls = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            call("call00000", "get_weather", {"city": "Paris", "unit": "celsius", "days": 3}),
            call("call00001", "get_weather", {"city": "東京", "threshold": 0.25, "verbose": True, "extra": None}),
        ],
    }
    tool_res = [
        {"role": "tool", "tool_call_id": "call00000", "name": "get_weather", "content": "{\"temp\": 21.5, \"sky\": \"☀️ clear\"}"},
        {"role": "tool", "tool_call_id": "call00001", "name": "get_weather", "content": "晴れ、気温 25°C\n湿度 60%"},
    ]
    asst_calls2 = {
        "role": "assistant",
        "content": "Let me also search.",
        "tool_calls": [call("call00002", "search", {"query": "best café", "filters": {"site": "example.com", "year": 2024}, "limit": 5})],
    }
    tool_res2 = [{"role": "tool", "tool_call_id": "call00002", "name": "search", "content": STRESS}]
    asst_final = {"role": "assistant", "content": "Paris: 21.5°C ☀️; 東京: 25°C. Top café: Café de Flore."}
    user2 = {"role": "user", "content": "Now write code: ```go\nfmt.Println(\"{\\\"a\\\": 1}\")\n``` and JSON {\"k\": [1, 2.5, null]}."}
    asst_think = {"role": "assistant", "content": "The answer is 42.", "reasoning_content": "Let me think step by step.\n6 × 7 = 42."}
    asst_think_calls = {
        "role": "assistant",
        "content": "",
        "reasoning_content": "I need the weather first.",
        "tool_calls": [call("call00003", "get_weather", {"city": "Lyon"})],
    }
    tool_res3 = [{"role": "tool", "tool_call_id": "call00003", "name": "get_weather", "content": "{\"temp\": 18}"}]
    asst_null_calls = {"role": "assistant", "content": None, "tool_calls": [call("call00004", "search", {"query": "null content"})]}
    tool_res4 = [{"role": "tool", "tool_call_id": "call00004", "name": "search", "content": ""}]
    asst_str_args = {
        "role": "assistant",
        "content": "Calling with string arguments.",
        "tool_calls": [{"id": "call00009", "type": "function", "function": {"name": "search", "arguments": "{\"query\":  \"raw  string\", \"limit\":3}"}}],
    }
    user_empty = {"role": "user", "content": ""}
    asst_empty = {"role": "assistant", "content": ""}

    rounds = [sys_msg, user1, asst_calls, *tool_res, asst_calls2, *tool_res2, asst_final]
    R = []  # (name, messages, tools, gen)
    R.append(("simple", [sys_msg, user1], None, True))
    R.append(("no_system", [user1], None, True))
    R.append(("multi_turn", [sys_msg, user1, asst_final, user2], None, True))
    R.append(("multi_turn_no_gen", [sys_msg, user1, asst_final], None, False))
    R.append(("tools_first_prompt", [sys_msg, user1], TOOLS, True))
    R.append(("tools_no_system", [user1], TOOLS, True))
    R.append(("tool_rounds", rounds, TOOLS, False))
    R.append(("tool_rounds_then_user", rounds + [user2], TOOLS, True))
    R.append(("reasoning", [user1, asst_think, user2], None, True))
    R.append(("reasoning_last", [user1, asst_think], None, False))
    R.append(("reasoning_tools", [user1, asst_think_calls, *tool_res3], TOOLS, True))
    R.append(("stress_user", [{"role": "user", "content": STRESS}], None, True))
    R.append(("empty_content", [user_empty, asst_empty, user1], None, True))
    R.append(("null_content_tool_call", [user1, asst_null_calls, *tool_res4], TOOLS, True))
    R.append(("string_arguments", [user1, asst_str_args], TOOLS, False))
    R.append(("simple_tools_rounds", rounds, SIMPLE_TOOLS, False))

    D = []  # (name, history, new, tools)
    D.append(("after_tool_calls", [sys_msg, user1, asst_calls], tool_res, TOOLS))
    D.append(("second_tool_round", [sys_msg, user1, asst_calls, *tool_res, asst_calls2], tool_res2, TOOLS))
    D.append(("after_answer_user", [sys_msg, user1, asst_final], [user2], None))
    D.append(("after_answer_user_tools", [sys_msg, user1, asst_calls, *tool_res, asst_final], [user2], TOOLS))
    D.append(("reasoning_tool_round", [user1, asst_think_calls], tool_res3, TOOLS))
    D.append(("reasoning_then_user", [user1, asst_think], [user2], None))
    D.append(("empty_tool_result", [user1, asst_null_calls], tool_res4, TOOLS))
    D.append(("simple_tools_after_tool_calls", [sys_msg, user1, asst_calls], tool_res, SIMPLE_TOOLS))
    D.append(("simple_tools_second_round", [sys_msg, user1, asst_calls, *tool_res, asst_calls2], tool_res2, SIMPLE_TOOLS))
    D.append(("simple_tools_after_answer", [sys_msg, user1, asst_calls, *tool_res, asst_final], [user2], SIMPLE_TOOLS))
    D.append(("stress_tool_result", [user1, asst_str_args], [{"role": "tool", "tool_call_id": "call00009", "name": "search", "content": STRESS}], TOOLS))
    return R, D


def attempt(fn):
    try:
        return {"expected": fn()}
    except Exception as e:  # noqa: BLE001 - every exception is recorded as the expected outcome
        return {"error_type": type(e).__name__, "expected_error": str(e), "raised": isinstance(e, jinja2.exceptions.TemplateError) and type(e) is jinja2.exceptions.TemplateError}


def history_end(hist, full, kinds):
    """Where the history ends in full, from the history's own render: "rewritten" when full renders the history
    differently, "no stop token" when the history's render does not end with one (gpt-oss ends a final answer with
    <|end|> where the model generated <|return|>)."""
    end = len(hist)
    best = -1
    for s, is_end in kinds.items():
        i = hist.rfind(s)
        if is_end and i >= 0 and hist[i + len(s):].strip() == "":
            best = max(best, i + len(s))
    if best >= 0:
        end = best
    elif all(kinds.values()):
        return "no stop token"  # the history's render does not end as the model's turn did: no exact delta
    return end if full.startswith(hist[:end]) else "rewritten"


def end_kinds(tok, stops, variant):
    """Which stop tokens the template writes after the model's turn (True), and which only as the start of the
    next message (False: GLM's <|user|> and <|observation|>, which the model generates as its stop)."""
    def after(messages):
        try:
            text = tok.apply_chat_template(messages, tokenize=False, **variant)
        except Exception:  # noqa: BLE001 - a template may refuse a tool message here
            return None
        return text[text.rindex("agentrt-a") + len("agentrt-a"):]

    u, a = {"role": "user", "content": "u"}, {"role": "assistant", "content": "agentrt-a"}
    ending = after([u, a]) or ""
    nexts = [x for x in (after([u, a, {"role": "user", "content": "n"}]), after([u, a, {"role": "tool", "content": "n"}])) if x]
    return {s: ending.startswith(s) or not any(x.startswith(s) for x in nexts) for s in stops}


def marker_end(render, history, new, kinds):
    """The history's end located by a marker in place of the first new message's content (rewriting templates):
    after the last end-of-turn stop token before it, or at the last stop token that starts a message."""
    probe_new = copy.deepcopy(new)
    probe_new[0]["content"] = MARK
    probe = render(history + probe_new)
    head = probe[: probe.index(MARK)]
    cut = -1
    for s, is_end in kinds.items():
        i = head.rfind(s)
        if i >= 0:
            cut = max(cut, i + len(s) if is_end else i)
    last = history[-1]
    text = (last.get("content") or "").strip()
    if text and not last.get("tool_calls"):
        # the history's last turn must be before the cut, or the cut is after an earlier turn
        i = head[:cut].rfind(text)
        if i < 0:
            return None
        between = head[i + len(text):cut]
        for s, is_end in kinds.items():
            if is_end and between.endswith(s):
                between = between[: -len(s)]
                break
        if any(s in between for s in kinds):
            return None
    full = render(history + new)
    if full[:cut] != probe[:cut]:
        return None  # the new content changes how the history renders: no cut exists
    return cut


def main():
    meta = json.loads((FAMILIES / "families.json").read_text())
    OUT.mkdir(parents=True, exist_ok=True)
    renders, deltas = corpus()
    summary = []
    for family in sorted(meta):
        tok, special = tokenizer_for(family)
        stops = [special["eos_token"]] + meta[family]["stops"]
        cases = []
        for vi, variant in enumerate(meta[family]["variants"]):
            vname = "default" if not variant else "_".join(f"{k}={v}" for k, v in variant.items())

            def render(messages, tools=None, gen=False, variant=variant):
                return tok.apply_chat_template(copy.deepcopy(messages), tools=copy.deepcopy(tools), add_generation_prompt=gen, tokenize=False, **variant)

            for name, messages, tools, gen in renders:
                c = {"kind": "render", "name": f"{vname}/{name}", "kwargs": variant, "messages": messages, "tools": tools, "add_generation_prompt": gen}
                c.update(attempt(lambda: render(messages, tools, gen)))
                cases.append(c)
            for name, history, new, tools in deltas:
                c = {"kind": "delta", "name": f"{vname}/{name}", "kwargs": variant, "history": history, "new": new, "tools": tools, "add_generation_prompt": True}
                res = attempt(lambda: render(history + new, tools, True))
                if "expected_error" in res:
                    c.update(res)
                    cases.append(c)
                    continue
                full = res["expected"]
                hist = attempt(lambda: render(history, tools, False))
                kinds = end_kinds(tok, stops, variant)
                end = history_end(hist["expected"], full, kinds) if "expected" in hist else "rewritten"
                c["rewrites_history"] = end == "rewritten"
                if end == "no stop token":
                    end = None
                elif end == "rewritten":
                    end = marker_end(lambda m: render(m, tools, True), history, new, kinds)
                c["expected_full"] = full
                c["expected_delta"] = full[end:] if end is not None and end >= 0 else None
                cases.append(c)
        ok = sum(1 for c in cases if "expected_error" not in c)
        summary.append(f"{family}: {len(cases)} cases, {ok} render, {len(cases) - ok} raise")
        doc = {"family": family, "special_tokens": special, "stops": meta[family]["stops"], "transformers": transformers.__version__, "jinja2": jinja2.__version__, "now": NOW.isoformat(), "cases": cases}
        (OUT / f"{family}.json").write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
