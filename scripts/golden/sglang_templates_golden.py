"""Golden renders of SGLang's DeepSeek tool templates (runtime/family/testdata/sglang-templates/*.jinja, copies of
sgl-project/sglang's examples/chat_template files, source in that folder's README) with transformers'
apply_chat_template, on the families corpus (scripts/golden/families_golden.py): full renders, and the full render
of each delta case (history + new messages, with the generation prompt). The Go test
(runtime/family/sglang_template_test.go) renders the same messages with tito and compares byte for byte.

Usage: $AGENTRT_GOLDEN_PYTHON scripts/golden/sglang_templates_golden.py
"""

import copy
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import families_golden as fg  # noqa: E402  (freezes strftime_now's clock too)
from transformers import PreTrainedTokenizerFast  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DIR = ROOT / "runtime" / "family" / "testdata" / "sglang-templates"
# template file -> the family whose tokenizer_config (special tokens) it is served with
TEMPLATES = {"tool_chat_template_deepseekv3.jinja": "deepseek-v3", "tool_chat_template_deepseekv31.jinja": "deepseek-v3.1"}


def main():
    R, D = fg.corpus()
    out = {"transformers": fg.transformers.__version__, "jinja2": fg.jinja2.__version__, "now": fg.NOW.isoformat(), "templates": {}}
    for file, family in TEMPLATES.items():
        tok, special = fg.tokenizer_for(family)
        tok = PreTrainedTokenizerFast(tokenizer_object=tok.backend_tokenizer, chat_template=(DIR / file).read_text(), **special)
        cases = []
        for name, messages, tools, gen in R:
            c = {"name": name, "messages": messages, "tools": tools, "add_generation_prompt": gen}
            c.update(fg.attempt(lambda: tok.apply_chat_template(copy.deepcopy(messages), tools=copy.deepcopy(tools), add_generation_prompt=gen, tokenize=False)))
            cases.append(c)
        for name, history, new, tools in D:
            messages = history + new
            c = {"name": "delta_" + name, "messages": messages, "tools": tools, "add_generation_prompt": True}
            c.update(fg.attempt(lambda: tok.apply_chat_template(copy.deepcopy(messages), tools=copy.deepcopy(tools), add_generation_prompt=True, tokenize=False)))
            cases.append(c)
        out["templates"][file] = {"family": family, "special_tokens": special, "cases": cases}
        print(f"{file}: {len(cases)} cases, {sum(1 for c in cases if 'expected' in c)} render")
    (DIR / "golden.json").write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n")


if __name__ == "__main__":
    main()
