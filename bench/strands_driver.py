#!/usr/bin/env python3
"""The strands-sglang side of the side-by-side benchmark.

Runs every prompt of a JSONL file (agentrt's prompt format: {"id", "prompt"}) n times through
strands-sglang's SGLangModel + a Strands Agent with the same agent agentrt's runtime.toml describes:
the same system prompt, the same calculator tool (same spec, same semantics as agentrt's builtin
calculator), Hermes tool calls, enable_thinking=False, the same sampling params, a LoopLimiter with
the same limits and a NullConversationManager. One SGLangModel + Agent per episode (they are
stateful); one SGLangClient and one tokenizer shared by all, as strands-sglang's README advises.
asyncio runs C episodes at once.

Each finished episode is one JSON line: id, status, token_ids, loss_mask, logprobs, segments
(strands' Rollout.segment_info as [is_output, length]), messages (the Strands conversation).

With --tools, --enable-thinking, --max-new-tokens and --limits it runs the long-horizon benchmark's agent
(bench/long_horizon.sh) instead: its tools are read_document (bench/tools/documents, ported: the same spec and
text), execute_python_code (agentrt's python preset: the same spec; the code runs in `python3 -I -c` subprocesses,
and what the model sees is formatted as agentrt formats a successful run) and the calculator.

usage: strands_driver.py --url URL --model DIR --prompts FILE --out FILE --concurrency C [--n N]
         [--tools calculator,read_document,execute_python_code] [--enable-thinking] [--max-new-tokens N]
         [--limits JSON] [--system-prompt TEXT]
"""
import argparse
import asyncio
import json
import math
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from strands import Agent  # noqa: E402
from strands.agent.conversation_manager import NullConversationManager  # noqa: E402
from strands.tools.tools import PythonAgentTool  # noqa: E402
from strands_sglang import LoopLimiter, LoopLimitReachedError, SGLangClient, SGLangModel  # noqa: E402
from strands_sglang.tool_parsers import HermesToolParser  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

from long_horizon import doc_text  # noqa: E402  bench/long_horizon.py: read_document's generator (the C tool's, ported)

# The agent of agentrt's runtime.toml, field by field.
SYSTEM_PROMPT = "You are a careful assistant. Use the calculator tool for arithmetic, then give the final answer."
SAMPLING = {"max_new_tokens": 1024, "temperature": 1.0, "top_p": 1.0}
LIMITS = {"max_tool_iters": 5, "max_tool_calls": 10, "max_parallel_tool_calls": 4, "max_messages": 32}
CALCULATOR_SPEC = {
    "name": "calculator",
    "description": 'Evaluate an arithmetic expression with + - * / % ** (power), parentheses and decimals, '
                   'e.g. "(2 + 3) * 4.5 ** 2".',
    "inputSchema": {"json": {"type": "object", "properties": {"expression": {
        "type": "string", "description": "The arithmetic expression to evaluate."}}, "required": ["expression"]}},
}


DOCUMENT_SPEC = {
    "name": "read_document",
    "description": "Read a document: returns its first `bytes` bytes of text.",
    "inputSchema": {"json": {"type": "object", "properties": {
        "id": {"type": "string", "description": "The document to read."},
        "bytes": {"type": "integer", "description": "How many bytes of it to return (1 to 65536)."}},
        "required": ["id", "bytes"]}},
}
PYTHON_SPEC = {
    "name": "execute_python_code",
    "description": "Run Python 3.12 code and return what it prints (stdout, and stderr if any). Each call starts a "
                   "fresh interpreter: print() every value you need. Standard library only (math, fractions, itertools, "
                   "decimal, statistics, ...; no numpy or sympy), no network, files only under /tmp (they persist across "
                   "the calls of this conversation).",
    "inputSchema": {"json": {"type": "object", "properties": {
        "code": {"type": "string", "description": "Python source code to run"}}, "required": ["code"]}},
}


async def read_document(tool_use, **_):
    args = tool_use.get("input") or {}
    doc_id, n = args.get("id"), args.get("bytes")
    if not isinstance(doc_id, str) or not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 65536:
        return {"toolUseId": tool_use["toolUseId"], "status": "error",
                "content": [{"text": "Error: read_document: bad arguments"}]}
    return {"toolUseId": tool_use["toolUseId"], "status": "success", "content": [{"text": doc_text(doc_id, n)}]}


async def execute_python_code(tool_use, **_):
    code = (tool_use.get("input") or {}).get("code")
    if not isinstance(code, str):
        return {"toolUseId": tool_use["toolUseId"], "status": "error", "content": [{"text": "Error: no code"}]}
    proc = await asyncio.create_subprocess_exec(sys.executable, "-I", "-c", code, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    text = out.decode()
    if err:
        text += ("" if not text or text.endswith("\n") else "\n") + "stderr:\n" + err.decode()
    if proc.returncode != 0:
        text = "Error: the program exited with status %d\n" % proc.returncode + text
    text = text.rstrip("\n") or "(no output: print() the values you want to see)"
    return {"toolUseId": tool_use["toolUseId"], "status": "error" if proc.returncode else "success",
            "content": [{"text": text}]}


class CalcError(Exception):
    pass


class _Calc:
    """agentrt's builtin calculator (plugins/builtin/calculator/calc.go), ported: + - * / % **, parentheses,
    unary signs, decimals and exponents; Python precedence and floored modulo; float arithmetic."""

    def __init__(self, s):
        self.s, self.i, self.depth = s, 0, 0

    def ws(self):
        while self.i < len(self.s) and self.s[self.i] in " \t\r\n":
            self.i += 1

    def add(self):
        v = self.mul()
        while True:
            self.ws()
            if self.i >= len(self.s) or self.s[self.i] not in "+-":
                return v
            op = self.s[self.i]
            self.i += 1
            w = self.mul()
            v = v + w if op == "+" else v - w

    def mul(self):
        v = self.unary()
        while True:
            self.ws()
            if self.i >= len(self.s):
                return v
            op = self.s[self.i]
            if op not in "*/%" or self.s.startswith("**", self.i):
                return v
            pos = self.i
            self.i += 1
            w = self.unary()
            if op == "*":
                v *= w
            elif w == 0:
                raise CalcError(("division" if op == "/" else "modulo") + f" by zero at offset {pos}")
            elif op == "/":
                v /= w
            else:
                m = math.fmod(v, w)
                if m != 0 and (m < 0) != (w < 0):
                    m += w
                v = m

    def unary(self):
        self.ws()
        if self.i < len(self.s) and self.s[self.i] in "+-":
            op = self.s[self.i]
            self.i += 1
            self.depth += 1
            if self.depth > 200:
                raise CalcError("expression nested too deeply")
            v = self.unary()
            self.depth -= 1
            return -v if op == "-" else v
        return self.power()

    def power(self):
        base = self.atom()
        self.ws()
        if self.s.startswith("**", self.i):
            self.i += 2
            exp = self.unary()  # right-associative, binds a unary exponent: 2**-1
            try:
                return math.pow(base, exp)
            except (OverflowError, ValueError) as e:
                raise CalcError("result is not a finite number") from e
        return base

    def atom(self):
        self.ws()
        if self.i >= len(self.s):
            raise CalcError(f"unexpected end of expression at offset {self.i}")
        c = self.s[self.i]
        if c == "(":
            self.i += 1
            self.depth += 1
            if self.depth > 200:
                raise CalcError("expression nested too deeply")
            v = self.add()
            self.depth -= 1
            self.ws()
            if self.i >= len(self.s) or self.s[self.i] != ")":
                raise CalcError(f"missing ')' at offset {self.i}")
            self.i += 1
            return v
        start = self.i
        while self.i < len(self.s) and (self.s[self.i].isdigit() or self.s[self.i] == "."):
            self.i += 1
        if self.i < len(self.s) and self.s[self.i] in "eE" and self.i > start:
            j = self.i + 1
            if j < len(self.s) and self.s[j] in "+-":
                j += 1
            if j < len(self.s) and self.s[j].isdigit():
                self.i = j
                while self.i < len(self.s) and self.s[self.i].isdigit():
                    self.i += 1
        if self.i == start:
            raise CalcError(f"unexpected {c!r} at offset {start}")
        try:
            return float(self.s[start:self.i])
        except ValueError as e:
            raise CalcError(f"bad number {self.s[start:self.i]!r} at offset {start}") from e


def evaluate(expr):
    if len(expr) > 10000:
        raise CalcError(f"expression too long ({len(expr)} bytes, limit 10000)")
    c = _Calc(expr)
    c.ws()
    if c.i == len(expr):
        raise CalcError("empty expression")
    v = c.add()
    c.ws()
    if c.i < len(expr):
        raise CalcError(("unmatched ')'" if expr[c.i] == ")" else f"unexpected {expr[c.i]!r}") + f" at offset {c.i}")
    if math.isinf(v) or math.isnan(v):
        raise CalcError("result is not a finite number")
    return v


def format_number(v):
    """Go's format in calc.go: integral values up to 2^53 without a fraction, others shortest round-trip."""
    if v == math.trunc(v) and abs(v) <= 2 ** 53:
        return "0" if v == 0 else str(int(v))
    return repr(v)


async def calculator(tool_use, **_):
    expr = (tool_use.get("input") or {}).get("expression")
    try:
        if not isinstance(expr, str):
            raise CalcError('missing argument "expression"' if expr is None else 'argument "expression" must be a string')
        return {"toolUseId": tool_use["toolUseId"], "status": "success",
                "content": [{"text": format_number(evaluate(expr))}]}
    except CalcError as e:
        return {"toolUseId": tool_use["toolUseId"], "status": "error", "content": [{"text": f"Error: {e}"}]}


TOOLS = {"calculator": (CALCULATOR_SPEC, calculator), "read_document": (DOCUMENT_SPEC, read_document),
         "execute_python_code": (PYTHON_SPEC, execute_python_code)}


async def episode(eid, prompt, client, tokenizer, a):
    model = SGLangModel(client=client, tokenizer=tokenizer, tool_parser=HermesToolParser(),
                        sampling_params=dict(SAMPLING, max_new_tokens=a.max_new_tokens), enable_thinking=a.enable_thinking)
    limiter = LoopLimiter(**(json.loads(a.limits) if a.limits else LIMITS))
    tools = [PythonAgentTool(n, TOOLS[n][0], TOOLS[n][1]) for n in a.tools.split(",")]
    agent = Agent(model=model, tools=tools, system_prompt=a.system_prompt, conversation_manager=NullConversationManager(),
                  hooks=[limiter], callback_handler=None)
    status = "completed"
    try:
        await agent.invoke_async(prompt)
    except Exception as e:  # the limiter's error arrives wrapped (EventLoopException)
        cause, seen = e, 0
        while cause is not None and not isinstance(cause, LoopLimitReachedError) and seen < 8:
            cause, seen = cause.__cause__ or cause.__context__, seen + 1
        if isinstance(cause, LoopLimitReachedError):
            status = "truncated"
        else:
            status = f"error: {type(e).__name__}: {e}"
    r = model.rollout
    return {"id": eid, "status": status, "token_ids": r.token_ids, "loss_mask": r.loss_mask,
            "logprobs": r.logprobs, "segments": [list(s) for s in r.segment_info],
            "turns": sum(1 for s in r.segment_info if s[0]), "messages": agent.messages}


async def main_async(a):
    tokenizer = AutoTokenizer.from_pretrained(a.model)
    client = SGLangClient(base_url=a.url, max_connections=max(a.concurrency, 100), timeout=None, max_retries=3)
    jobs = []
    for line in open(a.prompts):
        if line.strip():
            p = json.loads(line)
            for k in range(int(p.get("n", a.n))):
                jobs.append((f"{p['id']}#{k}", p["prompt"]))
    sem = asyncio.Semaphore(a.concurrency)
    out = open(a.out, "w")
    failed = 0

    async def one(eid, prompt):
        nonlocal failed
        async with sem:
            t = await episode(eid, prompt, client, tokenizer, a)
        if t["status"].startswith("error"):
            failed += 1
        out.write(json.dumps(t) + "\n")

    t0 = time.monotonic()
    await asyncio.gather(*(one(eid, p) for eid, p in jobs))
    wall = time.monotonic() - t0
    out.close()
    await client.close()
    print(json.dumps({"episodes": len(jobs), "errors": failed, "wall_s": round(wall, 3)}), file=sys.stderr)
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompts", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--n", type=int, default=1)
    ap.add_argument("--tools", default="calculator", help="comma-separated: " + ", ".join(TOOLS))
    ap.add_argument("--enable-thinking", action="store_true")
    ap.add_argument("--max-new-tokens", type=int, default=SAMPLING["max_new_tokens"])
    ap.add_argument("--limits", help="LoopLimiter arguments as a JSON object (default: runtime.toml's limiter)")
    ap.add_argument("--system-prompt", default=SYSTEM_PROMPT)
    a = ap.parse_args()
    sys.exit(asyncio.run(main_async(a)))


if __name__ == "__main__":
    main()
