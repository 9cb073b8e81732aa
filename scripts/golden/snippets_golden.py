#!/usr/bin/env python3
"""Golden renders of small chat-template snippets: the Python/Jinja2 behaviours chat templates rely on, rendered
by transformers' apply_chat_template (its sandboxed environment, tojson, raise_exception, ...).

    source ~/.cache/agentrt/env.sh
    $AGENTRT_GOLDEN_PYTHON scripts/golden/snippets_golden.py

Writes tito/testdata/snippets.json: per snippet the template, and the text transformers renders for one
user message ("hi") with kwargs x (a dict), n (None), s (a string), or the exception it raises. Rerun to regenerate.
"""

import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import jinja2  # noqa: E402
import tokenizers  # noqa: E402
from tokenizers.models import WordLevel  # noqa: E402
from transformers import PreTrainedTokenizerFast  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tito" / "testdata" / "snippets.json"

KWARGS = {"x": {"b": 1, "a": [1, 2.5, None, True, "q'uote"], "u": "é\"\n"}, "n": None, "s": "a,b,,c d  e", "f": 3.0, "i": 7}

SNIPPETS = {
    # Python printing of values
    "print_none": "{{ n }}|{{ none }}",
    "print_bools": "{{ true }}|{{ false }}|{{ 1 == 1 }}",
    "print_list": "{{ [1, 'a', none, true, 2.5] }}",
    "print_dict": "{{ x }}",
    "print_float": "{{ f }}|{{ 1.5e-7 }}|{{ 1e16 }}|{{ 0.1 + 0.2 }}|{{ 10 / 4 }}|{{ 10 // 4 }}|{{ 2 ** 10 }}",
    "string_filter": "{{ x | string }}|{{ n | string }}|{{ [1, 'b'] | string }}",
    # tojson, as transformers defines it
    "tojson_default": "{{ x | tojson }}",
    "tojson_indent": "{{ x | tojson(indent=2) }}",
    "tojson_indent_str": "{{ x | tojson(indent='--') }}",
    "tojson_separators": "{{ x | tojson(separators=(',', ':')) }}",
    "tojson_sort_keys": "{{ x | tojson(sort_keys=true) }}",
    "tojson_ensure_ascii": "{{ x | tojson(ensure_ascii=true) }}",
    "tojson_html": "{{ '<a href=\"x\">&</a>' | tojson }}",
    "tojson_positional": "{{ x | tojson(false, 1) }}",
    "tojson_empty": "{{ {} | tojson(indent=2) }}|{{ [] | tojson(indent=2) }}",
    "tojson_undefined": "{{ nope | tojson }}",
    # string methods
    "split_maxsplit": "{{ s.split(',', 1) }}|{{ s.split(',') }}|{{ s.split() }}|{{ s.split(none, 1) }}|{{ s.rsplit(',', 1) }}",
    "replace": "{{ s.replace(',', ';') }}|{{ s.replace(',', ';', 1) }}",
    "startswith": "{{ ''.endswith('x') }}|{{ ''.startswith('') }}|{{ s.startswith(('x', 'a')) }}|{{ s.endswith('e') }}",
    "strip_family": "{{ '  x  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '  x'.lstrip() }}|{{ 'x\\n'.rstrip() }}",
    "char_index": "{{ 'héllo'[1] }}|{{ 'héllo'[-1] }}|{{ 'héllo'[1:3] }}|{{ 'héllo'[::-1] }}",
    "list_index": "{{ [7][-1] }}|{{ [1, 2, 3][-2] }}|{{ [1, 2, 3][::2] }}|{{ [1, 2, 3][5] is defined }}",
    "percent_format": "{{ '%s and %d' % ('a', 3) }}",
    "format_method": "{{ '{} and {}'.format('a', 3) }}",
    "upper_title": "{{ 'hello world'.title() }}|{{ 'Hello'.lower() }}|{{ 'hello'.capitalize() }}",
    "find_count": "{{ s.find(',') }}|{{ s.count(',') }}|{{ s.rfind(',') }}",
    "in_operator": "{{ 'b' in s }}|{{ 'a' in x }}|{{ 1 in [1, 2] }}",
    "concat": "{{ 'a' ~ 1 ~ 'b' }}|{{ 'a' + 'b' }}",
    "concat_none": "{{ 'a' ~ n }}",
    "str_plus_dict": "{{ 'a' + x }}",
    "str_plus_int": "{{ 'a' + 1 }}",
    # dicts and lists
    "dict_items": "{% for k, v in x.items() %}{{ k }}={{ v }};{% endfor %}",
    "dict_filter_items": "{% for k, v in x | items %}{{ k }};{% endfor %}",
    "dict_keys_values": "{{ x.keys() | list }}|{{ x.values() | list | length }}|{{ x.get('b') }}|{{ x.get('zz', 'd') }}|{{ x.get('zz') }}",
    "dict_literal_int_keys": "{% set d = {1: 'one', 2: 'two'} %}{{ d[1] }}|{{ d }}",
    "dict_global": "{{ dict(a=1, b=2) }}",
    "list_append": "{% set l = [] %}{{ l.append(1) }}{{ l }}",
    "dict_update": "{% set d = {} %}{{ d.update({'a': 1}) }}{{ d }}",
    "namespace": "{% set ns = namespace(a=0, l=[]) %}{% for i in range(3) %}{% set ns.a = ns.a + i %}{% endfor %}{{ ns.a }}",
    "loop_controls": "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}",
    "loop_vars": "{% for i in 'abc' %}{{ loop.index }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.previtem is defined }} {% endfor %}",
    "tests": "{{ x is mapping }}|{{ s is string }}|{{ n is none }}|{{ [1] is sequence }}|{{ s is sequence }}|{{ n is iterable }}|{{ nope is defined }}|{{ i is number }}|{{ f is integer }}|{{ true is boolean }}",
    # undefined, as transformers' environment (jinja2.Undefined)
    "undefined_print": "[{{ nope }}]",
    "undefined_attr": "{{ nope.attr }}",
    "undefined_filter": "{{ nope | length }}",
    "undefined_iterate": "{% for a in nope %}{{ a }}{% endfor %}ok",
    "undefined_default": "{{ nope | default('d') }}|{{ n | default('d') }}|{{ n | default('d', true) }}",
    "none_iterate": "{% for a in n %}{{ a }}{% endfor %}ok",
    "none_attr": "[{{ n.attr }}]",
    "missing_key": "[{{ x.zz }}]|[{{ x['zz'] }}]",
    "missing_key_attr": "{{ x.zz.yy }}",
    # raising and bounds
    "raise_exception": "{{ raise_exception('Bad: ' ~ messages[0].role) }}",
    "recursive_macro": "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
    "whitespace_control": "a\n  {% if true %}\n  b\n  {% endif %}\n  {{- 'c' -}}\n  d\n",
    "trailing_newline": "x\n",
    "filters": "{{ [3, 1, 2] | sort | join('-') }}|{{ 'abc' | reverse }}|{{ [1, 2, 3] | sum }}|{{ ['b', 'a'] | first }}|{{ 'a b' | replace(' ', '') }}|{{ [1, 1, 2] | unique | list }}|{{ 'x' | indent(2) }}|{{ [1, 2] | map('string') | join }}|{{ 5 | abs }}|{{ -2.5 | round }}|{{ 'A' | lower }}",
    "filter_attr": "{{ messages | map(attribute='role') | join(',') }}|{{ messages | selectattr('role', 'equalto', 'user') | list | length }}",
}


def main():
    vocab = {"[UNK0]": 0, "<eos>": 1}
    backend = tokenizers.Tokenizer(WordLevel(vocab, unk_token="[UNK0]"))
    out = []
    for name, src in SNIPPETS.items():
        tok = PreTrainedTokenizerFast(tokenizer_object=backend, chat_template=src, eos_token="<eos>")
        case = {"name": name, "template": src}
        try:
            case["expected"] = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, **KWARGS)
        except Exception as e:  # noqa: BLE001 - the exception is the expected outcome
            case["error_type"] = type(e).__name__
            case["expected_error"] = str(e)
            case["raised"] = type(e) is jinja2.exceptions.TemplateError
        out.append(case)
    doc = {"kwargs": KWARGS, "special_tokens": {"eos_token": "<eos>"}, "cases": out}
    OUT.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")


if __name__ == "__main__":
    main()
