#!/usr/bin/env python3
"""Golden token ids and decodes for tito's tokenizer tests, from the real Hugging Face libraries.

Run (offline; the model folders come from `make setup`):

    source ~/.cache/agentrt/env.sh && $AGENTRT_GOLDEN_PYTHON scripts/golden/tokenizer_golden.py

Writes tito/testdata/tokenizer/model_folders.json (what transformers.AutoTokenizer makes of each model folder:
special tokens, length, chat template sha256) and tito/testdata/tokenizer/<model>.json for Qwen3 ($AGENTRT_QWEN3_MODEL) and Llama 3.1
($AGENTRT_LLAMA31_MODEL). For each text: the ids of tokenizers.Tokenizer.encode with add_special_tokens False
and True, and decode(ids) with skip_special_tokens False and True. Decode-only cases cover id sequences that
no encode produces (a multi-byte character cut in half, special tokens mid-response, ids outside the
vocabulary). Every encode is cross-checked against transformers.AutoTokenizer, which must agree.
Never edit the output by hand: rerun this script.

With --bench it writes nothing and prints the reference library's encode throughput on the text that tito's
BenchmarkEncode100KB uses (the golden texts cycled to 100,000 bytes), for bench/results/tito-tokenizer.md.
"""

import hashlib
import json
import os
import random
import sys

import tokenizers
import transformers
from tokenizers import Tokenizer
from transformers import AutoTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tito", "testdata", "tokenizer")

MODELS = {
    "qwen3": ("AGENTRT_QWEN3_MODEL", ["<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<think>", "<|endoftext|>"]),
    "llama3.1": ("AGENTRT_LLAMA31_MODEL", ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|end_of_text|>", "<|reserved_special_token_0|>"]),
}

# Curated strings that stress tokenizers. Keep names unique: the Go test runs one subtest per name.
CURATED = [
    ("empty", ""),
    ("ascii", "Hello, world! How are you today?"),
    ("contractions", "I'm sure they'll say we'd've DON'T it's He'S you're THEY'LL"),
    ("digits", "3.14159 1234567890 12,345,678 0x7fffffff 1e-9 2026-11-22"),
    ("leading_space", " hello"),
    ("spaces_run", "a" + " " * 37 + "b"),
    ("spaces_only", "        "),
    ("tabs_newlines", "a\tb\n\nc\r\nd\re\n\n\n\tf"),
    ("crlf_lines", "line one\r\nline two\r\n\r\nline four\r\n"),
    ("trailing_newlines", "end\n\n\n\n"),
    ("nbsp_ideographic_space", "a\u00a0b\u3000c\u2028d\u2029e\u200bf"),
    ("unicode_latin", "naïve café résumé Ångström Straße façade"),
    ("nfc_combining", "cafe\u0301 A\u030a n\u0303 e\u0301\u0301 \u1e9b\u0323"),
    ("nfc_precomposed", "café Å ñ"),
    ("emoji", "I ❤️ 🍕 and 🚀!"),
    ("emoji_zwj", "👨‍👩‍👧‍👦 👩🏽‍💻 🏳️‍🌈 🇯🇵🇺🇸 ✋🏿"),
    ("cjk", "你好，世界！今天天气很好。日本語のテキストです。한국어 텍스트입니다."),
    ("arabic", "مرحبا بالعالم! هذا نص عربي مع أرقام ١٢٣٤٥."),
    ("hebrew_rtl_mix", "שלום world עולם 123"),
    ("hindi", "नमस्ते दुनिया, यह हिंदी है।"),
    ("thai", "สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่าง"),
    ("greek_cyrillic", "Καλημέρα κόσμε. Привет, мир! ΣΊΣΥΦΟΣ"),
    ("math_symbols", "∀x∈ℝ: x² ≥ 0 ⇒ √(x²) = |x| ∑ ∫ ∞ ≠ ≈"),
    ("go_code", "func main() {\n\tfmt.Println(\"hi\")\n\tfor i := 0; i < 10; i++ {\n\t\tx += i\n\t}\n}\n"),
    ("python_code", "def f(x):\n    if x > 0:\n        return x ** 2  # square\n    return -x\n\n\nprint(f(3))\n"),
    ("json", '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius", "days": [1, 2, 3]}}'),
    ("html", "<div class=\"a\"><p>Hello &amp; bye</p><br/></div>"),
    ("markdown", "# Title\n\n- item **bold** _it_\n- `code`\n\n```python\nx = 1\n```\n"),
    ("url_path", "https://example.com/a/b?c=d&e=f#g /usr/local/bin/agentrt C:\\Windows\\System32"),
    ("punct_runs", "!!! ??? ... --- *** ((( ))) ;;; ~~~ ''' \"\"\""),
    ("apostrophe_s_long", "'s 'S 'ſ 'K 'LL 'll"),
    ("special_im", "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"),
    ("special_tool_call", "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>"),
    ("special_think", "<think>\nLet me think.\n</think>\n\nAnswer."),
    ("special_llama", "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"),
    ("special_python_tag", "<|python_tag|>{\"name\": \"f\"}<|eom_id|>"),
    ("special_adjacent", "<|im_end|><|im_end|><|eot_id|><|eot_id|>"),
    ("special_in_word", "abc<|im_end|>def<|eot_id|>ghi"),
    ("special_spaced", " <|im_start|> <|eot_id|> "),
    ("partial_special", "<|im_start <|im_end| im_start|> <|eot_id <tool_call </tool_call <|endoftext"),
    ("malformed_special", "<| im_start |> <|IM_END|> << tool_call >> <|eot id|>"),
    ("endoftext", "text<|endoftext|>more"),
    ("replacement_char", "bad \ufffd char"),
    ("private_use", "\ue000\uf8ff\U000f0000"),
    ("astral", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕏 𐍈 🂡"),
    ("control_chars", "a\x01b\x07c\x1bd\x7f"),
    ("nul_only", "\x00"),
    ("nul_spaced", "a \x00 b"),
    ("nul_in_word", "x\x00y\x00\x00z"),
    ("long_word", "Pneumonoultramicroscopicsilicovolcanoconiosis " * 3),
    ("long_digits", "9" * 50),
    ("long_whitespace_mixed", " \t \n \r\n  \t\t  \n" * 5),
]

# Decode-only cases: (name, ids builder). Built from each model's own encodes, so they apply to both models.
def decode_cases(tok, specials):
    cases = []
    emoji = tok.encode("👨‍👩‍👧‍👦🍕", add_special_tokens=False).ids
    for k in range(1, len(emoji)):
        cases.append((f"emoji_cut_{k}", emoji[:k]))
        cases.append((f"emoji_tail_{k}", emoji[k:]))
    cjk = tok.encode("你好世界", add_special_tokens=False).ids
    cases.append(("cjk_reversed", list(reversed(cjk))))
    sp = [tok.token_to_id(s) for s in specials]
    if None in sp:
        sys.exit(f"tokenizer_golden: special tokens missing from the vocabulary: {[s for s, i in zip(specials, sp) if i is None]}")
    hello = tok.encode("Hello there", add_special_tokens=False).ids
    cases.append(("specials_between", sp[:2] + hello + sp[2:] + hello))
    cases.append(("specials_only", sp))
    vs = tok.get_vocab_size(True)
    cases.append(("out_of_vocab", hello + [vs, vs + 1000, 2**31 - 1] + hello))
    cases.append(("every_100th_id", list(range(0, vs, 100))))
    return cases


def random_mixes(n, seed):
    """Seeded random mixes of the curated strings' pieces, so that runs between categories are exercised."""
    rng = random.Random(seed)
    pieces = [s for _, s in CURATED if s]
    atoms = list("aZ9 \t\n\r'.,!?-_()<>|/\\\"") + ["é", "e\u0301", "你", "😀", "\u200d", "١", "<|im_end|>", "<|eot_id|>", "<tool_call>", "   ", "\r\n"]
    out = []
    for i in range(n):
        parts = []
        for _ in range(rng.randint(1, 8)):
            if rng.random() < 0.4:
                p = rng.choice(pieces)
                a = rng.randrange(len(p))
                parts.append(p[a : a + rng.randint(1, 40)])
            else:
                parts.append("".join(rng.choice(atoms) for _ in range(rng.randint(1, 12))))
        out.append((f"random_{i:03d}", "".join(parts)))
    return out


def nul_mixes(n, seed):
    """Seeded strings holding U+0000 (which tito cannot pass through the C ABI as is) next to whitespace runs,
    punctuation and the control characters tito swaps it for."""
    rng = random.Random(seed)
    atoms = list("aZ9 \t\n\r'.,!?-_()<>|/\\\"") + ["é", "你", "😀", "<|im_end|>", "<|eot_id|>", "   ", "\r\n",
                                                  "\x00", "\x00", "\x00\x00", "\x01", "\x02\x03"]
    out = []
    for i in range(n):
        s = "".join(rng.choice(atoms) for _ in range(rng.randint(1, 15)))
        if "\x00" not in s:
            s += "\x00"
        out.append((f"nul_random_{i:03d}", s))
    return out


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, (env, specials) in MODELS.items():
        folder = os.environ.get(env)
        if not folder:
            sys.exit(f"tokenizer_golden: ${env} is not set (source ~/.cache/agentrt/env.sh)")
        path = os.path.join(folder, "tokenizer.json")
        tok = Tokenizer.from_file(path)
        auto = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        cases = []
        for cname, text in CURATED + random_mixes(120, seed=20261122) + nul_mixes(60, seed=7):
            ids = tok.encode(text, add_special_tokens=False).ids
            ids_sp = tok.encode(text, add_special_tokens=True).ids
            for add, want in ((False, ids), (True, ids_sp)):
                got = auto(text, add_special_tokens=add)["input_ids"]
                if got != want:
                    sys.exit(f"tokenizer_golden: {name}/{cname}: transformers and tokenizers disagree (add_special_tokens={add})")
            cases.append({
                "name": cname,
                "text": text,
                "ids": ids,
                "ids_special": ids_sp,
                "decoded": tok.decode(ids_sp, skip_special_tokens=False),
                "decoded_skip": tok.decode(ids_sp, skip_special_tokens=True),
            })
        dcases = []
        for cname, ids in decode_cases(tok, specials):
            dcases.append({
                "name": cname,
                "ids": ids,
                "decoded": tok.decode(ids, skip_special_tokens=False),
                "decoded_skip": tok.decode(ids, skip_special_tokens=True),
            })
        token_ids = {s: tok.token_to_id(s) for s in specials}
        for s in ["Ġhello", "hello", "Ċ", "ĠĠ"]:
            token_ids[s] = tok.token_to_id(s)
        doc = {
            "generated_by": "scripts/golden/tokenizer_golden.py",
            "libraries": {"tokenizers": tokenizers.__version__, "transformers": transformers.__version__},
            "model": name,
            "tokenizer_sha256": sha256(path),
            "vocab_size": tok.get_vocab_size(True),
            "token_ids": token_ids,
            "encode": cases,
            "decode": dcases,
        }
        dest = os.path.join(OUT, f"{name}.json")
        with open(dest, "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print(f"wrote {os.path.relpath(dest, ROOT)}: {len(cases)} encode cases, {len(dcases)} decode cases")
    model_folders()


FOLDERS = {"qwen3": "AGENTRT_QWEN3_MODEL", "qwen2.5": "AGENTRT_QWEN25_MODEL", "llama3.1": "AGENTRT_LLAMA31_MODEL"}


def model_folders():
    """What transformers.AutoTokenizer makes of each model folder, for tito.LoadModel's test."""
    out = {}
    for name, env in FOLDERS.items():
        folder = os.environ.get(env)
        if not folder:
            sys.exit(f"tokenizer_golden: ${env} is not set (source ~/.cache/agentrt/env.sh)")
        t = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        tmpl = t.chat_template if isinstance(t.chat_template, str) else (t.chat_template or {}).get("default")
        extra = getattr(t, "additional_special_tokens", None) or getattr(t, "extra_special_tokens", None) or []
        out[name] = {
            "bos_token": t.bos_token or "",
            "eos_token": t.eos_token or "",
            "pad_token": t.pad_token or "",
            "unk_token": t.unk_token or "",
            "eos_token_id": t.eos_token_id,
            "additional_special_tokens": [str(x) for x in extra],
            "len": len(t),
            "chat_template_sha256": hashlib.sha256(tmpl.encode()).hexdigest() if tmpl else "",
            "tokenizer_sha256": sha256(os.path.join(folder, "tokenizer.json")),
        }
    doc = {"generated_by": "scripts/golden/tokenizer_golden.py", "libraries": {"transformers": transformers.__version__}, "folders": out}
    dest = os.path.join(OUT, "model_folders.json")
    with open(dest, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {os.path.relpath(dest, ROOT)}: {len(out)} model folders")


def bench():
    import time

    with open(os.path.join(OUT, "qwen3.json"), encoding="utf-8") as f:
        g = json.load(f)
    text = ""
    while len(text.encode()) < 100_000:
        text += "".join(c["text"] + "\n" for c in g["encode"])
    text = text.encode()[:100_000].decode("utf-8", "ignore")
    small = "\n<|im_start|>user\n<tool_response>\n{\"temperature\": 21.5, \"unit\": \"celsius\", \"city\": \"Paris\"}\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    for name, (env, _) in MODELS.items():
        tok = Tokenizer.from_file(os.path.join(os.environ[env], "tokenizer.json"))
        n = len(tok.encode(text, add_special_tokens=False).ids)
        best = min(_timed(lambda: tok.encode(text, add_special_tokens=False)) for _ in range(7))
        print(f"{name}: encode 100 KB: {n} tokens in {best * 1e3:.1f} ms = {n / best:,.0f} tokens/s, {len(text.encode()) / best / 1e6:.2f} MB/s")
        reps = 2000
        t = _timed(lambda: [tok.encode(small, add_special_tokens=False) for _ in range(reps)])
        print(f"{name}: encode a {len(small)}-byte template delta: {t / reps * 1e6:.1f} us")


def _timed(fn):
    import time

    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    if sys.argv[1:] == ["--bench"]:
        bench()
    else:
        main()
