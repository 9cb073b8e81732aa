#!/usr/bin/env python3
"""Golden chat-template renders for tito's template tests, from the real Hugging Face libraries.

Run with the golden venv (transformers, tokenizers, jinja2 pinned in scripts/requirements-golden.txt), offline:

    source ~/.cache/agentrt/env.sh
    $AGENTRT_GOLDEN_PYTHON scripts/golden/template_golden.py

For each model folder ($AGENTRT_QWEN3_MODEL, $AGENTRT_QWEN25_MODEL, $AGENTRT_LLAMA31_MODEL) it writes
tito/testdata/template/<family>.jinja (the folder's chat template, as transformers loads it) and one
tito/testdata/template/<case>.json per case:

  render cases: the inputs of apply_chat_template(..., tokenize=False), the expected text, and the ids of that
                text (tokenizer.encode(text, add_special_tokens=False));
  delta cases:  a history that ends with an assistant turn and the new messages after it: the full render of
                history + new (with the generation prompt) and of the history alone, with ids;
  error cases:  inputs for which transformers raises, and its message.

Nothing here is hand-edited; rerun the script to regenerate.
"""

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
from transformers import AutoTokenizer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tito" / "testdata" / "template"

# Strings that stress tokenizers and the template engine.
STRESS = (
    "Unicode: naïve café, Ωμέγα, Привет, עברית, العربية; emoji: 👩‍💻🚀🎉🇫🇷; CJK: 你好，世界！日本語のテキスト。한국어 문장.\n"
    "Code:\n```python\ndef f(x):\n\treturn {\"k\": [1, 2.50, -3e-7]}  # comment\n```\n"
    "Whitespace runs:      eight spaces,\t\ttabs,\n\n\nthree newlines, trailing   \n"
    "Digits: 1234567890 3.14159 0x1F -42 1e10 000123\n"
    "Special tokens in text: <|im_end|> <|im_start|>user <|eot_id|> <|begin_of_text|> <think> </think> "
    "<tool_call> {{ not_jinja }} {% raw %} \\n \\u00e9 \"quoted\" 'single'"
)

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city. Température en °C, 天气.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. \"Paris\""},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
                "days": {"type": "integer", "minimum": 1, "maximum": 14},
                "threshold": {"type": "number", "default": 0.5},
                "verbose": {"type": "boolean", "default": False},
                "extra": {"type": ["string", "null"], "default": None},
            },
            "required": ["city"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.\nReturns a list of {title, url} objects.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "filters": {
                    "type": "object",
                    "properties": {"site": {"type": "string"}, "year": {"type": "integer"}},
                },
                "limit": {"type": "integer", "default": 10},
            },
            "required": ["query"],
        },
    },
}
TOOLS = [WEATHER_TOOL, SEARCH_TOOL]


def call(cid, name, args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def qwen_cases():
    sys_msg = {"role": "system", "content": "You are a helpful assistant. Réponds en français si on te parle français."}
    user1 = {"role": "user", "content": "What's the weather in Paris and in 東京? Also search for 'best café'."}
    asst_calls = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            call("call_0", "get_weather", {"city": "Paris", "unit": "celsius", "days": 3}),
            call("call_1", "get_weather", {"city": "東京", "threshold": 0.25, "verbose": True, "extra": None}),
        ],
    }
    tool_res = [
        {"role": "tool", "tool_call_id": "call_0", "content": "{\"temp\": 21.5, \"sky\": \"☀️ clear\"}"},
        {"role": "tool", "tool_call_id": "call_1", "content": "晴れ、気温 25°C\n湿度 60%"},
    ]
    asst_calls2 = {
        "role": "assistant",
        "content": "Let me also search.",
        "tool_calls": [call("call_2", "search", {"query": "best café", "filters": {"site": "example.com", "year": 2024}, "limit": 5})],
    }
    tool_res2 = [{"role": "tool", "tool_call_id": "call_2", "content": STRESS}]
    asst_final = {"role": "assistant", "content": "Paris: 21.5°C ☀️; 東京: 25°C. Top café: Café de Flore."}
    user2 = {"role": "user", "content": STRESS}
    asst_think = {
        "role": "assistant",
        "content": "The answer is 42.",
        "reasoning_content": "Let me think step by step.\n6 × 7 = 42.",
    }
    asst_str_args = {
        "role": "assistant",
        "content": "Calling with string arguments.",
        "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "search", "arguments": "{\"query\":  \"raw  string\", \"limit\":3}"}}],
    }
    return sys_msg, user1, asst_calls, tool_res, asst_calls2, tool_res2, asst_final, user2, asst_think, asst_str_args


def cases_for(family):
    sys_msg, user1, asst_calls, tool_res, asst_calls2, tool_res2, asst_final, user2, asst_think, asst_str_args = qwen_cases()
    C = []

    def render(name, messages, tools=None, gen=False, **kw):
        C.append({"kind": "render", "name": name, "messages": messages, "tools": tools, "add_generation_prompt": gen, "kwargs": kw})

    def delta(name, history, new, tools=None, **kw):
        C.append({"kind": "delta", "name": name, "history": history, "new": new, "tools": tools, "add_generation_prompt": True, "kwargs": kw})

    def error(name, messages, tools=None, gen=False, raised=False, **kw):
        # raised: the template itself calls raise_exception, so its message must reach the caller verbatim.
        C.append({"kind": "error", "name": name, "messages": messages, "tools": tools, "add_generation_prompt": gen, "kwargs": kw, "raised": raised})

    simple = [sys_msg, user1, asst_final, user2]
    if family in ("qwen3", "qwen25"):
        render("simple", simple, gen=True)
        render("simple_no_gen", simple, gen=False)
        render("no_system", [user1], gen=True)
        render("stress_user", [user2], gen=True)
        render("tools", [sys_msg, user1], tools=TOOLS, gen=True)
        render("tools_no_system", [user1], tools=TOOLS, gen=True)
        multi = [sys_msg, user1, asst_calls, *tool_res, asst_calls2, *tool_res2, asst_final, user2]
        render("tool_rounds", multi, tools=TOOLS, gen=True)
        render("tool_rounds_no_gen", multi[:-1], tools=TOOLS, gen=False)
        render("string_arguments", [user1, asst_str_args, tool_res[0]], tools=TOOLS, gen=True)
        error("parts_content", [{"role": "user", "content": [{"type": "text", "text": "parts are not strings"}]}, asst_final], gen=True)
        delta("after_user", [sys_msg, user1, asst_final], [user2], tools=TOOLS)
        delta("after_tools", [sys_msg, user1, asst_calls], tool_res, tools=TOOLS)
        delta("after_tools_no_tools_spec", [user1, asst_calls2], tool_res2)
    if family == "qwen3":
        render("thinking_on", simple, gen=True, enable_thinking=True)
        render("thinking_off", simple, gen=True, enable_thinking=False)
        render("reasoning_content", [sys_msg, user1, asst_think, user2, asst_think], gen=False)
        render("reasoning_after_query", [user1, asst_think], gen=False)
        render("reasoning_in_content", [user1, {"role": "assistant", "content": "<think>\nhidden\n</think>\n\nshown"}], gen=False)
        render("reasoning_tools", [sys_msg, user1, {**asst_calls, "reasoning_content": "I need two calls."}, *tool_res], tools=TOOLS, gen=True, enable_thinking=False)
        delta("after_tools_thinking_off", [sys_msg, user1, {**asst_calls, "reasoning_content": "Two calls."}], tool_res, tools=TOOLS, enable_thinking=False)
        delta("after_user_thinking_off", [sys_msg, user1, asst_final], [user2], enable_thinking=False)
    if family == "llama31":
        render("simple", simple, gen=True)
        render("no_system", [user1], gen=True)
        render("stress_user", [sys_msg, user2], gen=True)
        render("tools_in_user", [sys_msg, user1], tools=TOOLS, gen=True)
        render("tools_in_system", [sys_msg, user1], tools=TOOLS, gen=True, tools_in_user_message=False)
        one_call = {"role": "assistant", "tool_calls": [call("c0", "get_weather", {"city": "Paris", "days": 2})]}
        llama_rounds = [sys_msg, user1, one_call, {"role": "tool", "content": "{\"temp\": 21.5}"}, asst_final, user2]
        render("tool_rounds", llama_rounds, tools=TOOLS, gen=True)
        render("tool_rounds_system_tools", llama_rounds, tools=TOOLS, gen=True, tools_in_user_message=False, date_string="01 Jan 2025")
        render("ipython_mapping", [user1, one_call, {"role": "ipython", "content": STRESS}], tools=TOOLS, gen=True)
        render("builtin_tools", [sys_msg, user1], tools=TOOLS, gen=True, builtin_tools=["brave_search", "code_interpreter", "wolfram_alpha"])
        delta("after_user", [sys_msg, user1, asst_final], [user2], tools=TOOLS)
        delta("after_tools", [sys_msg, user1, one_call], [{"role": "tool", "content": "{\"temp\": 21.5}"}], tools=TOOLS)
        delta("after_tools_system_tools", [sys_msg, user1, one_call], [{"role": "tool", "content": STRESS}], tools=TOOLS, tools_in_user_message=False)
        error("two_tool_calls", [user1, asst_calls], tools=TOOLS, raised=True)
        error("tools_without_user", [sys_msg], tools=TOOLS, gen=True, raised=True)
    return C


# A template that exercises the engine features chat templates lean on, rendered by transformers with the
# Qwen3 tokenizer's special tokens (family "engine").
ENGINE_TEMPLATE = """{%- set ns = namespace(n=0, seen=[]) -%}
{%- for m in messages -%}
{%- set ns.n = ns.n + 1 -%}
[{{ loop.index0 }}/{{ loop.length }}{{ '|first' if loop.first }}{{ '|last' if loop.last }}] {{ m.role }}: {{ m.content | trim }}
{% if m.tool_calls is defined %}{% for tc in m.tool_calls %}{% for k, v in tc.function.arguments | items %}  {{ k }}={{ v | tojson }}
{% endfor %}{% endfor %}{% endif %}
{%- if loop.index0 == 5 %}{% break %}{% endif -%}
{%- endfor -%}
count={{ ns.n }} last={{ messages[-1].role }} rev={{ (messages[::-1] | map(attribute='role') | join(',')) }}
compact={{ extra | tojson }}
indent2={{ extra | tojson(indent=2) }}
indent_str={{ extra | tojson(indent='\t') }}
sorted={{ extra | tojson(sort_keys=true) }}
seps={{ extra | tojson(separators=[',', ':']) }}
ascii={{ extra | tojson(ensure_ascii=true) }}
tools={{ tools | tojson }}
none_tools={{ none_tools | tojson }}
bools={{ flag is true }} {{ flag is false }} {{ missing is false }} {{ missing is defined }} {{ flag is boolean }}
strings={{ 'a,b,,c'.split(',') | tojson }} {{ '  x  '.strip() }}|{{ 'Hello'.upper() }}|{{ 'x\n\n'.rstrip('\n') }}|{{ 'abc'.startswith('ab') }}|{{ 'abc'.endswith('bc') }}
slices={{ [1, 2, 3, 4][1:3] | tojson }} {{ [1, 2, 3, 4][-2:] | tojson }} {{ 'hello'[1:4] }}
tests={{ extra is mapping }} {{ 'x' is string }} {{ 'x' is iterable }} {{ 3 is number }} {{ 3 is integer }} {{ 3.5 is float }}
math={{ 7 // 2 }} {{ 7 % 3 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }}
filters={{ [3, 1, 2] | sort | join('-') }} {{ ['a', 'b'] | length }} {{ 'x' | default('d') }} {{ undefined_var | default('d') }} {{ [1, 2, 3] | reject('equalto', 2) | list | tojson }} {{ [1, 2, 3] | select('odd') | list | tojson }} {{ 'abc' | upper }} {{ 'a b' | replace(' ', '_') }} {{ ' x ' | trim }} {{ [3, 1, 2] | reverse | list | tojson }} {{ 'é中ab' | reverse }} {{ 'é中ab' | first }}{{ 'é中ab' | last }} {{ 'é中ab' | length }} {{ 'é中ab'[1:3] }} {{ extra | reverse | list | tojson }}
methods={{ extra.get('nested') | tojson }} {{ extra.get('nope', 'dflt') }} {{ extra.get('nope') is none }} {{ extra.keys() | list | tojson }} {% for k, v in extra.nested.items() %}{{ k }}={{ v | tojson }};{% endfor %} {% if tools %}{{ tools[0].function.parameters.properties.keys() | join(',') }}{% endif %} {{ extra.values() | list | length }}
range={% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %} {% for i in range(1, 7, 2) %}{% if i == 3 %}{% continue %}{% endif %}{{ i }}{% endfor %}
{%- if add_generation_prompt %}
GEN {{ eos_token }}{{ bos_token }}|{{ pad_token }}
{%- endif %}
"""

ENGINE_EXTRA = {
    "z": 1, "a": [1, 2.5, -0.0, 1e-07, 1e16, 123456789.125, 3.0, True, False, None],
    "nested": {"k": "välue \"q\" \\ \n\t\u0001 \u007f ü 😀 中", "empty": {}, "list": []},
    "big": 12345678901234567,
}


def engine_cases():
    msgs = [
        {"role": "system", "content": "  sys with spaces  "},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "", "tool_calls": [call("c", "f", {"b": 2, "a": [1, {"y": None}], "s": "ü"})]},
        {"role": "tool", "content": "r"},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "never rendered: the loop breaks at index 5"},
    ]
    kw = {"extra": ENGINE_EXTRA, "flag": False, "none_tools": None}
    return [
        {"kind": "render", "name": "features", "messages": msgs, "tools": [WEATHER_TOOL], "add_generation_prompt": True, "kwargs": kw},
        {"kind": "render", "name": "features_no_gen", "messages": msgs[:2], "tools": None, "add_generation_prompt": False, "kwargs": {**kw, "flag": True}},
    ]


def main():
    families = [
        ("qwen3", "AGENTRT_QWEN3_MODEL"),
        ("qwen25", "AGENTRT_QWEN25_MODEL"),
        ("llama31", "AGENTRT_LLAMA31_MODEL"),
    ]
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.json"):
        old.unlink()
    written = 0
    for family, env in families:
        model_dir = os.environ.get(env)
        if not model_dir:
            sys.exit(f"template_golden: ${env} is not set (source ~/.cache/agentrt/env.sh)")
        tok = AutoTokenizer.from_pretrained(model_dir)
        (OUT / f"{family}.jinja").write_text(tok.chat_template, encoding="utf-8")
        special = dict(tok.special_tokens_map)

        def apply(messages, tools, gen, kw):
            return tok.apply_chat_template(messages, tools=tools, add_generation_prompt=gen, tokenize=False, **kw)

        def ids(text):
            return tok.encode(text, add_special_tokens=False)

        for c in cases_for(family):
            case = {
                "family": family,
                "model_env": env,
                "template": f"{family}.jinja",
                "special_tokens": special,
                **c,
            }
            if c["kind"] == "render":
                text = apply(c["messages"], c["tools"], c["add_generation_prompt"], c["kwargs"])
                case["expected"] = text
                case["expected_ids"] = ids(text)
            elif c["kind"] == "delta":
                full = apply(c["history"] + c["new"], c["tools"], True, c["kwargs"])
                hist = apply(c["history"], c["tools"], False, c["kwargs"])
                case["expected_full"] = full
                case["expected_full_ids"] = ids(full)
                case["expected_history"] = hist
            else:
                try:
                    apply(c["messages"], c["tools"], c["add_generation_prompt"], c["kwargs"])
                except Exception as e:  # noqa: BLE001 (any failure of the reference is the expected outcome)
                    case["expected_error"] = f"{type(e).__name__}: {e}"
                else:
                    sys.exit(f"template_golden: {family}/{c['name']}: expected transformers to raise")
            path = OUT / f"{family}_{c['kind']}_{c['name']}.json"
            path.write_text(json.dumps(case, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
            written += 1
    tok = AutoTokenizer.from_pretrained(os.environ["AGENTRT_QWEN3_MODEL"])
    (OUT / "engine.jinja").write_text(ENGINE_TEMPLATE, encoding="utf-8")
    for c in engine_cases():
        text = tok.apply_chat_template(c["messages"], tools=c["tools"], add_generation_prompt=c["add_generation_prompt"],
                                       tokenize=False, chat_template=ENGINE_TEMPLATE, **c["kwargs"])
        case = {"family": "engine", "model_env": "AGENTRT_QWEN3_MODEL", "template": "engine.jinja",
                "special_tokens": dict(tok.special_tokens_map), **c, "expected": text,
                "expected_ids": tok.encode(text, add_special_tokens=False)}
        (OUT / f"engine_{c['kind']}_{c['name']}.json").write_text(json.dumps(case, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        written += 1
    versions = {"transformers": transformers.__version__, "tokenizers": tokenizers.__version__, "jinja2": jinja2.__version__}
    (OUT / "VERSIONS").write_text(json.dumps(versions, indent=1) + "\n", encoding="utf-8")
    print(f"template_golden: wrote {written} cases to {OUT.relative_to(ROOT)} with {versions}")


if __name__ == "__main__":
    main()
