"""Judges recorded HTTP exchanges between agentrt's SGLang client and its emulator with SGLang's own code.

Usage: validate.py EXCHANGES.jsonl   (written by sglang/contract_test.go; one exchange per line:
name, method, path, request, status, content_type, response; and one line {"sampling_param_names": [...]},
agentrt's list of SGLang's sampling params, which must equal api_types.SamplingParams' fields)

The judges are SGLang 0.5.23's, from PyPI `sglang==0.5.23 --no-deps` (scripts/setup.d/35-sglang-types.sh):
  - sglang/api/v1/api_types.py, the generated /generate contract that SGLang's http_server checks every body
    with (srt/entrypoints/api_contract.py: a violation is HTTP 400 {"error": <the decoder's text>});
  - srt/managers/io_struct.py, the request structs of the admin endpoints (read with `ast`: importing it needs
    torch);
  - srt/entrypoints/http_server.py, the handlers' status codes and literal bodies (read with `ast`);
  - srt/managers/schedule_batch.py, Req._compute_max_prefix_len: the radix-cache match limit, which bounds
    meta_info.cached_tokens;
  - srt/entrypoints/v1_loads.py and srt/managers/load_snapshot.py, /v1/loads (read with `ast`): the reply's keys,
    LoadSnapshot's core fields and types, QueueMetrics' fields and the valid include sections.
Nothing here is a copy of SGLang's rules: each is read from those files at run time. Exit status 1 when any
exchange breaks the contract, with one line per violation.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import sys
from typing import Any

spec = importlib.util.find_spec("sglang")  # locates the package without running its __init__ (which needs torch)
if spec is None or not spec.submodule_search_locations:
    sys.exit("validate.py: the sglang package is not installed in this interpreter")
SGLANG = spec.submodule_search_locations[0]


def _load(rel: str, name: str):
    s = importlib.util.spec_from_file_location(name, os.path.join(SGLANG, rel))
    m = importlib.util.module_from_spec(s)
    sys.modules[name] = m
    s.loader.exec_module(m)
    return m


api = _load("api/v1/api_types.py", "sglang_api_types")


def _tree(rel: str) -> ast.Module:
    with open(os.path.join(SGLANG, rel), encoding="utf-8") as f:
        return ast.parse(f.read())


IO_STRUCT = _tree("srt/managers/io_struct.py")
HTTP_SERVER = _tree("srt/entrypoints/http_server.py")
SCHEDULE_BATCH = _tree("srt/managers/schedule_batch.py")
V1_LOADS = _tree("srt/entrypoints/v1_loads.py")
LOAD_SNAPSHOT = _tree("srt/managers/load_snapshot.py")


def class_annotations(tree: ast.Module, cls_name: str) -> dict[str, str]:
    """The annotated fields of a class in tree, with their annotations as source text."""
    for n in tree.body:
        if isinstance(n, ast.ClassDef) and n.name == cls_name:
            return {st.target.id: ast.unparse(st.annotation) for st in n.body
                    if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)}
    raise SystemExit(f"validate.py: no class {cls_name} (SGLang moved it?)")


def frozenset_literal(body: list[ast.stmt], name: str) -> set[str]:
    """The strings of `name = frozenset({...})` among the statements."""
    for st in body:
        if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in st.targets):
            return {e.value for e in ast.walk(st.value) if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    raise SystemExit(f"validate.py: no {name} = frozenset(...) (SGLang moved it?)")


def loads_handler_keys() -> set[str]:
    """The keys of the dict v1_loads.get_loads returns for JSON."""
    for n in ast.walk(V1_LOADS):
        if isinstance(n, ast.AsyncFunctionDef) and n.name == "get_loads":
            for r in ast.walk(n):
                if isinstance(r, ast.Return) and isinstance(r.value, ast.Dict):
                    return {k.value for k in r.value.keys if isinstance(k, ast.Constant)}
    raise SystemExit("validate.py: v1_loads.get_loads returns no dict literal (SGLang moved it?)")


def struct_fields(cls_name: str) -> set[str]:
    """The annotated fields of an io_struct class and its io_struct bases."""
    classes = {n.name: n for n in IO_STRUCT.body if isinstance(n, ast.ClassDef)}
    out: set[str] = set()
    todo = [cls_name]
    while todo:
        c = classes.get(todo.pop())
        if c is None:
            continue
        for st in c.body:
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                out.add(st.target.id)
        todo += [b.id for b in c.bases if isinstance(b, ast.Name)]
    if not out:
        raise SystemExit(f"validate.py: io_struct.{cls_name} has no fields (SGLang moved it?)")
    return out


def route(path: str) -> ast.AST:
    """The http_server handler function registered for path."""
    for n in ast.walk(HTTP_SERVER):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in n.decorator_list:
                if isinstance(d, ast.Call) and d.args and isinstance(d.args[0], ast.Constant) and d.args[0].value == path:
                    return n
    raise SystemExit(f"validate.py: http_server.py has no handler for {path}")


def literal_dicts(fn: ast.AST) -> list[dict[str, Any]]:
    """The dict literals in a handler whose keys are all constants (values: constants, else None)."""
    out = []
    for n in ast.walk(fn):
        if isinstance(n, ast.Dict) and n.keys and all(isinstance(k, ast.Constant) for k in n.keys):
            out.append({k.value: (v.value if isinstance(v, ast.Constant) else None) for k, v in zip(n.keys, n.values)})
    return out


def body_annotation(fn: ast.AST) -> str:
    """The io_struct type of the handler's `obj` body parameter (Annotated[T, Body()] or T)."""
    for a in fn.args.args:
        if a.arg == "obj" and a.annotation is not None:
            ann = a.annotation
            if isinstance(ann, ast.Subscript) and isinstance(ann.slice, ast.Tuple):
                ann = ann.slice.elts[0]
            if isinstance(ann, ast.Name):
                return ann.id
    raise SystemExit(f"validate.py: handler {fn.name} has no typed obj parameter")


def _max_prefix_len_uses_logprob_start_len() -> bool:
    """Whether Req._compute_max_prefix_len still caps the radix match at logprob_start_len when logprobs are asked."""
    for n in ast.walk(SCHEDULE_BATCH):
        if isinstance(n, ast.FunctionDef) and n.name == "_compute_max_prefix_len":
            src = ast.unparse(n)
            return "self.return_logprob and self.logprob_start_len >= 0" in src and "min(max_prefix_len, self.logprob_start_len)" in src
    return False


MATCH_LIMIT_BY_LOGPROB_START = _max_prefix_len_uses_logprob_start_len()

errors: list[str] = []


def parse(text: str) -> Any:
    """A response body as JSON, or the text itself when it is not JSON."""
    try:
        return json.loads(text or "null")
    except ValueError:
        return text


def fail(ex: dict, msg: str) -> None:
    errors.append(f"{ex['name']} ({ex['method']} {ex['path']} -> {ex['status']}): {msg}")


def contract_error(body: Any) -> str | None:
    try:
        api.GenerateRequest.from_json_value(body)
    except api.JsonContractError as e:
        return str(e)
    return None


def check_generate(ex: dict) -> None:
    req = json.loads(ex["request"])
    err = contract_error(req)
    if err is not None:
        # Either FastAPI's parse into io_struct.GenerateReqInput refuses it first (the RequestValidationError
        # handler: 400 with ErrorResponse(message, type="Bad Request", code=400)), or the contract gate does:
        # http_server.generate_request, ORJSONResponse(status_code=400, content={"error": contract_error}).
        body = parse(ex["response"])
        fastapi = (isinstance(body, dict) and set(body) == {"object", "message", "type", "param", "code"}
                   and body["object"] == "error" and body["type"] == "Bad Request" and body["code"] == 400)
        if ex["status"] != 400:
            fail(ex, f"SGLang refuses this body with 400 ({err}), the emulator answered {ex['status']}")
        elif body != {"error": err} and not fastapi:
            fail(ex, f"body {ex['response']!r}, SGLang's is {json.dumps({'error': err})} (or FastAPI's ErrorResponse)")
        return
    if ex["status"] != 200:
        # http_server._create_error_response: {"error": {"message": str(e)}}
        body = parse(ex["response"])
        if not (isinstance(body, dict) and set(body) == {"error"} and isinstance(body["error"], dict)
                and isinstance(body["error"].get("message"), str)):
            fail(ex, f"error body {ex['response']!r} is not SGLang's {{\"error\": {{\"message\": ...}}}}")
        return
    try:
        resp = api.GenerateResponse.from_json_value(parse(ex["response"]))
    except api.JsonContractError as e:
        fail(ex, f"response breaks GenerateResponse: {e}")
        return
    m = resp.meta_info
    if m is None:
        fail(ex, "response has no meta_info")
        return
    ids = req.get("input_ids")
    out = resp.output_ids or []
    if ids is not None and m.prompt_tokens != len(ids):
        fail(ex, f"prompt_tokens {m.prompt_tokens} != len(input_ids) {len(ids)}")
    if m.completion_tokens != len(out):
        fail(ex, f"completion_tokens {m.completion_tokens} != len(output_ids) {len(out)}")
    if isinstance(m.finish_reason, dict) or m.finish_reason is None:
        fail(ex, f"finish_reason {m.finish_reason!r} is none of FinishStop/FinishLength/FinishAbort")
    if req.get("return_logprob"):
        if m.output_token_logprobs is None or len(m.output_token_logprobs) != len(out):
            fail(ex, "output_token_logprobs are not one per output id")
        start = req.get("logprob_start_len", -1)
        want_in = 0 if start is None or start < 0 else m.prompt_tokens - start
        got_in = len(m.input_token_logprobs or [])
        if got_in != want_in:
            fail(ex, f"{got_in} input_token_logprobs, SGLang returns {want_in} for logprob_start_len {start}")
    # Req._compute_max_prefix_len: the match leaves at least one token to prefill, and with logprobs asked
    # it stops at logprob_start_len; cached_tokens can never be more.
    limit = m.prompt_tokens - 1
    start = req.get("logprob_start_len")
    if MATCH_LIMIT_BY_LOGPROB_START and req.get("return_logprob") and isinstance(start, int) and start >= 0:
        limit = min(limit, start)
    if m.cached_tokens > max(limit, 0):
        fail(ex, f"cached_tokens {m.cached_tokens} exceed SGLang's radix match limit {max(limit, 0)}")


def check_empty_ok(ex: dict) -> None:
    """Handlers that return Response(status_code=200): no body."""
    if ex["status"] != 200 or ex["response"] != "":
        fail(ex, f"SGLang answers 200 with an empty body, got {ex['status']} {ex['response']!r}")


def check_body_struct(ex: dict, cls: str) -> None:
    body = json.loads(ex["request"] or "{}")
    unknown = set(body) - struct_fields(cls)
    if unknown:
        fail(ex, f"request keys {sorted(unknown)} are not fields of io_struct.{cls}")
    return body


def check_loads(ex: dict) -> None:
    """/v1/loads: the reply's keys, each load's core fields (all of LoadSnapshot's but the sections, with values of
    their annotated types), the queues section's fields, and SGLang's 400 for an unknown include section."""
    snapshot = class_annotations(LOAD_SNAPSHOT, "LoadSnapshot")
    sections = frozenset_literal(LOAD_SNAPSHOT.body, "_SECTION_FIELDS")
    valid = frozenset_literal(next(n for n in LOAD_SNAPSHOT.body if isinstance(n, ast.ClassDef) and n.name == "LoadSnapshot").body, "VALID_SECTIONS")
    query = dict(kv.split("=", 1) for kv in ex.get("query", "").split("&") if "=" in kv)
    include = [s.strip() for s in query.get("include", "").split(",") if s.strip()]
    resp = parse(ex["response"])
    if set(include) - valid:
        if ex["status"] != 400 or not isinstance(resp, dict) or set(resp) != {"detail"} or not str(resp["detail"]).startswith("Invalid include sections"):
            fail(ex, f"SGLang answers 400 {{'detail': 'Invalid include sections: ...'}}, got {ex['status']} {ex['response']!r}")
        return
    if ex["status"] != 200 or not isinstance(resp, dict):
        fail(ex, f"want 200 and a JSON object, got {ex['status']} {ex['response']!r}")
        return
    if set(resp) != loads_handler_keys():
        fail(ex, f"keys {sorted(resp)}, v1_loads.get_loads returns {sorted(loads_handler_keys())}")
    core = {k: a for k, a in snapshot.items() if k not in sections}
    for load in resp.get("loads", []):
        if set(core) - set(load):
            fail(ex, f"a load lacks LoadSnapshot fields {sorted(set(core) - set(load))}")
        if set(load) - set(snapshot):
            fail(ex, f"a load has keys {sorted(set(load) - set(snapshot))} that are not LoadSnapshot fields")
        for k, ann in core.items():
            v = load.get(k)
            ok = ((ann == "int" and isinstance(v, int) and not isinstance(v, bool))
                  or (ann == "float" and isinstance(v, (int, float)) and not isinstance(v, bool))
                  or (ann.startswith("Optional") and (v is None or isinstance(v, (int, float, list)))))
            if not ok:
                fail(ex, f"{k} = {v!r} is not a {ann}")
        if "queues" in load:
            fields = set(class_annotations(LOAD_SNAPSHOT, "QueueMetrics"))
            if set(load["queues"]) != fields:
                fail(ex, f"queues keys {sorted(load['queues'])}, QueueMetrics has {sorted(fields)}")
            if include and not ({"queues", "all"} & set(include)):
                fail(ex, "queues present although include leaves them out")


def check(ex: dict) -> None:
    p = ex["path"]
    if p == "/generate":
        check_generate(ex)
    elif p == "/v1/loads":
        check_loads(ex)
    elif p == "/ready":
        if ex["status"] not in (200, 503) or ex["response"] != "":
            fail(ex, f"SGLang's /ready answers 200 or 503 with an empty body, got {ex['status']} {ex['response']!r}")
    elif p in ("/health", "/health_generate"):
        check_empty_ok(ex)
    elif p == "/abort_request":
        body = json.loads(ex["request"])
        try:
            api.AbortRequest.from_json_value(body)
        except api.JsonContractError as e:
            fail(ex, f"request breaks AbortRequest: {e}")
        check_body_struct(ex, body_annotation(route("/abort_request")))
        check_empty_ok(ex)
    elif p in ("/pause_generation", "/continue_generation"):
        fn = route(p)
        body = check_body_struct(ex, body_annotation(fn))
        if p == "/pause_generation" and "mode" in body and body["mode"] not in ("abort", "retract", "in_place"):
            fail(ex, f"mode {body['mode']!r} is not one of PauseGenerationReqInput's")
        want = [d for d in literal_dicts(fn) if "message" in d]
        if ex["status"] != 200 or parse(ex["response"]) not in want:
            fail(ex, f"SGLang answers 200 {want}, got {ex['status']} {ex['response']!r}")
    elif p == "/update_weights_from_disk":
        fn = route(p)
        body = check_body_struct(ex, body_annotation(fn))
        if not body.get("model_path"):
            fail(ex, "model_path is required by UpdateWeightFromDiskReqInput")
        resp = parse(ex["response"])
        keys = [set(d) for d in literal_dicts(fn)]
        if set(resp) not in keys:
            fail(ex, f"response keys {sorted(resp)}, SGLang's are {[sorted(k) for k in keys]}")
        if (ex["status"] == 200) != bool(resp.get("success")):
            fail(ex, "SGLang answers 200 exactly when success is true (400 otherwise)")
    elif p == "/flush_cache":
        fn = route(p)
        texts = [n.value for n in ast.walk(fn) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        if ex["status"] != 200 or not any(t.startswith("Cache flushed.") and ex["response"].startswith(t) for t in texts):
            fail(ex, f"SGLang answers 200 'Cache flushed.\\n...', got {ex['status']} {ex['response']!r}")
    elif p == "/model_info":
        resp = parse(ex["response"])
        try:
            api.GetModelInfoResponse.from_json_value(resp)
        except api.JsonContractError as e:
            fail(ex, f"response breaks GetModelInfoResponse: {e}")
        keys = set().union(*[set(d) for d in literal_dicts(route(p))])
        if set(resp) - keys - {"embedding"}:
            fail(ex, f"keys {sorted(set(resp) - keys)} are not in http_server.model_info's result")
        if keys - set(resp) - {"embedding"}:
            fail(ex, f"keys {sorted(keys - set(resp))} of http_server.model_info are missing")
    elif p == "/server_info":
        try:
            api.GetServerInfoResponse.from_json_value(parse(ex["response"]))
        except api.JsonContractError as e:
            fail(ex, f"response breaks GetServerInfoResponse: {e}")
    elif p == "/v1/models":
        resp = parse(ex["response"])
        if resp.get("object") != "list" or not isinstance(resp.get("data"), list) or not resp["data"]:
            fail(ex, "not an OpenAI ModelList (object 'list', data [...])")
            return
        for card in resp["data"]:
            try:
                c = api.ModelCard.from_json_value(card)
            except api.JsonContractError as e:
                fail(ex, f"data entry breaks ModelCard: {e}")
                continue
            if c.max_model_len <= 0:
                fail(ex, f"max_model_len {c.max_model_len}: SGLang serves the model's context length")
    else:
        fail(ex, "no SGLang contract known for this path (add one to validate.py)")


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    n = 0
    paths: dict[str, int] = {}
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            ex = json.loads(line)
            if "sampling_param_names" in ex:
                # sglang.SamplingParamNames: what agentrt accepts and forwards must be exactly SGLang's set.
                ours, theirs = ex["sampling_param_names"], list(api.SamplingParams.__struct_fields__)
                if ours != theirs:
                    errors.append(f"sglang.SamplingParamNames {ours} != api_types.SamplingParams fields {theirs}")
                continue
            n += 1
            paths[ex["path"]] = paths.get(ex["path"], 0) + 1
            check(ex)
    if not MATCH_LIMIT_BY_LOGPROB_START:
        errors.append("schedule_batch.Req._compute_max_prefix_len no longer caps the match at logprob_start_len: "
                      "revisit agentrt's turn-0 logprob_start_len (docs/PROTOCOL.md) and the emulator's cache")
    print(f"{n} exchanges ({', '.join(f'{p} x{c}' for p, c in sorted(paths.items()))}); {len(errors)} violations")
    for e in errors:
        print("  " + e)
    return 1 if errors or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
