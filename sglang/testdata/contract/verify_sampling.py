"""Judges sampling_params objects with SGLang's own SamplingParams (srt/sampling/sampling_params.py).

Usage: verify_sampling.py < PARAMS.jsonl   (written by sglang/verify_test.go: one sampling_params object per line,
as agentrt sends it). For each line it prints "ok" or the ValueError's message, after what SGLang runs on every
request: SamplingParams(**params) (its __post_init__ defaults), verify(vocab_size) and normalize(tokenizer).

sampling_params.py imports its watermarking module, which needs torch; only normalize_watermark_request (for the
watermark key, which these objects never set) is used from it, so a stand-in module provides it. Everything the
verdicts depend on is SGLang's code, read from the installed package (scripts/setup.d/35-sglang-types.sh).
"""
import importlib.util
import json
import os
import sys
import types

spec = importlib.util.find_spec("sglang")  # locates the package without running its __init__ (which needs torch)
if spec is None or not spec.submodule_search_locations:
    sys.exit("verify_sampling.py: the sglang package is not installed in this interpreter")
SGLANG = spec.submodule_search_locations[0]

stub = types.ModuleType("sglang.srt.sampling.watermarking.core")
stub.WatermarkRequestConfig = dict
stub.normalize_watermark_request = lambda w: w
sys.modules["sglang.srt.sampling.watermarking.core"] = stub

s = importlib.util.spec_from_file_location("sglang_sampling_params", os.path.join(SGLANG, "srt/sampling/sampling_params.py"))
sp = importlib.util.module_from_spec(s)
s.loader.exec_module(sp)


class Tokenizer:
    """Enough of a tokenizer for normalize: stop strings are measured in tokens."""

    def encode(self, text, add_special_tokens=False):
        return list(range(len(text)))


for line in sys.stdin:
    if not line.strip():
        continue
    params = json.loads(line)
    try:
        p = sp.SamplingParams(**params)
        p.verify(vocab_size=151936)
        p.normalize(Tokenizer())
        print("ok")
    except ValueError as e:
        print(str(e).replace("\n", " "))
    sys.stdout.flush()
