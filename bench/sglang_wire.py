#!/usr/bin/env python3
"""What SGLang 0.5.23 spends on CPU to receive one /generate request of N input_ids (bench/sglang_wire.sh runs it in
the venv of scripts/setup.d/36-sglang-http.sh: sglang --no-deps and its HTTP server path's packages, no torch).

SGLang's Python server (sglang/srt/entrypoints/http_server.py) receives /generate in uvicorn (loop="uvloop",
httptools) and FastAPI: the route `generate_request(obj: GenerateReqInput, request)` has FastAPI parse the body
(Starlette's request.json(): the stdlib json.loads) and validate it into the GenerateReqInput dataclass (pydantic;
input_ids through SGLang's own PlainValidator, srt/utils/field_validators.py), then checks the parsed body against
the generated contract (generate_contract_error: api_types.GenerateRequest.from_json_value); the TokenizerManager
turns input_ids into an array and sends the request to the scheduler over ZMQ as msgpack (io_struct.sock_send).

  stages   times each stage's CPU in process (median), with SGLang's own validator and contract code loaded from the installed
           package by path (its __init__ imports torch): json.loads, the dataclass validation, the contract check,
           list -> array + msgpack encode, and the scheduler side's msgpack decode. The dataclass has the fields an
           agentrt request sets (GenerateReqInput has ~80 more, all absent from the body and defaulted)
  http     the same route under uvicorn (uvloop, httptools) in a child process; sequential keep-alive requests; the
           server's CPU per request (its getrusage before and after) and the round trip's wall time

Prints one JSON object per line: {"what", "input_ids", "body_bytes", ...}. usage: sglang_wire.py [--sizes 2048,32768,131072]
"""
import argparse
import dataclasses
import http.client
import importlib.util
import json
import os
import random
import resource
import socket
import statistics
import subprocess
import sys
import time
from array import array
from typing import Annotated, Any, Dict, List, Optional, Union

SGLANG = importlib.util.find_spec("sglang").submodule_search_locations[0]


def _load(rel, name):
    s = importlib.util.spec_from_file_location(name, os.path.join(SGLANG, rel))
    m = importlib.util.module_from_spec(s)
    sys.modules[name] = m
    s.loader.exec_module(m)
    return m


api_types = _load("api/v1/api_types.py", "sglang_api_types")
field_validators = _load("srt/utils/field_validators.py", "sglang_field_validators")

import msgspec  # noqa: E402
from pydantic import PlainValidator, TypeAdapter  # noqa: E402


@dataclasses.dataclass
class GenerateReq:
    """The fields of SGLang's GenerateReqInput that an agentrt request sets, typed as there."""
    rid: Optional[Union[str, List[str]]] = dataclasses.field(default=None, kw_only=True)
    text: Optional[Union[List[str], str]] = None
    input_ids: Annotated[Optional[Union[List[List[int]], List[int]]],
                         PlainValidator(field_validators.validate_optional_list_i64_1d_2d)] = None
    sampling_params: Optional[Union[List[Dict[str, Any]], Dict[str, Any]]] = None
    return_logprob: Optional[Union[List[bool], bool]] = None
    logprob_start_len: Optional[Union[List[int], int]] = None
    stream: bool = False


def body(n, seed=1):
    """An agentrt /generate body (compact JSON, as sglang/types.go writes it) with n input_ids."""
    rng = random.Random(seed)
    ids = [rng.randrange(151643) for _ in range(n)]
    return json.dumps({"input_ids": ids, "sampling_params": {"max_new_tokens": 1024, "temperature": 1.0, "top_p": 1.0},
                       "return_logprob": True, "logprob_start_len": n - 40, "rid": "ep-1#0.7"},
                      separators=(",", ":")).encode()


def contract_error(parsed):
    try:
        api_types.GenerateRequest.from_json_value(parsed)
    except api_types.JsonContractError as e:
        return str(e)
    return None


def timed(fn, reps):
    """The median CPU time of fn (this thread's, so that a busy machine does not count), in µs."""
    ts = []
    for _ in range(reps):
        t0 = time.thread_time_ns()
        fn()
        ts.append(time.thread_time_ns() - t0)
    return round(statistics.median(ts) / 1000, 1)


def stages(sizes, reps):
    adapter = TypeAdapter(GenerateReq)
    enc = msgspec.msgpack.Encoder()
    for n in sizes:
        b = body(n)
        parsed = json.loads(b)
        assert contract_error(parsed) is None, contract_error(parsed)
        obj = adapter.validate_python(parsed)
        packed = enc.encode(msgspec.msgpack.Ext(1, array("q", obj.input_ids).tobytes()))
        r = {"what": "stages", "input_ids": n, "body_bytes": len(b),
             "json_loads_us": timed(lambda: json.loads(b), reps),
             "dataclass_validate_us": timed(lambda: adapter.validate_python(parsed), reps),
             "contract_check_us": timed(lambda: contract_error(parsed), reps),
             "to_array_msgpack_us": timed(lambda: enc.encode(msgspec.msgpack.Ext(1, array("q", obj.input_ids).tobytes())), reps),
             "scheduler_decode_us": timed(lambda: array("q", msgspec.msgpack.decode(packed).data).tolist(), reps)}
        r["total_us"] = round(sum(v for k, v in r.items() if k.endswith("_us")), 1)
        print(json.dumps(r), flush=True)


SERVER = r'''
import resource, sys
from array import array
import msgspec, uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import ORJSONResponse  # as SGLang's route returns its errors
import warnings; warnings.filterwarnings("ignore", message="ORJSONResponse is deprecated")
sys.argv = sys.argv[:1]
from sglang_wire import GenerateReq, contract_error
app = FastAPI()
enc = msgspec.msgpack.Encoder()
REPLY = {"text": "ok", "output_ids": [1, 2, 3], "meta_info": {"id": "x", "finish_reason": {"type": "stop", "matched": 3},
         "prompt_tokens": 0, "completion_tokens": 3, "cached_tokens": 0}}

@app.api_route("/generate", methods=["POST", "PUT"])
async def generate_request(obj: GenerateReq, request: Request):
    err = contract_error(await request.json())
    if err is not None:
        return ORJSONResponse(status_code=400, content={"error": err})
    enc.encode(msgspec.msgpack.Ext(1, array("q", obj.input_ids).tobytes()))  # TokenizerManager -> scheduler
    return ORJSONResponse(REPLY)

@app.get("/cpu")
async def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return {"cpu_s": r.ru_utime + r.ru_stime}

uvicorn.run(app, host="127.0.0.1", port=int(PORT), loop="uvloop", http="httptools", log_level="warning")
'''


def http_run(sizes, reps):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    here = os.path.dirname(os.path.abspath(__file__))
    srv = subprocess.Popen([sys.executable, "-c", SERVER.replace("PORT", str(port))], cwd=here,
                           env=dict(os.environ, PYTHONPATH=here))
    try:
        for _ in range(300):
            try:
                c = http.client.HTTPConnection("127.0.0.1", port)
                c.request("GET", "/cpu")
                c.getresponse().read()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise SystemExit("sglang_wire: the server did not start")

        def cpu():
            c.request("GET", "/cpu")
            return json.loads(c.getresponse().read())["cpu_s"]

        for n in sizes:
            b = body(n)
            hdr = {"Content-Type": "application/json"}
            for _ in range(3):  # warm up
                c.request("POST", "/generate", b, hdr)
                r = c.getresponse()
                assert r.status == 200, r.read()
                r.read()
            walls = []
            c0 = cpu()
            for _ in range(reps):
                t0 = time.perf_counter_ns()
                c.request("POST", "/generate", b, hdr)
                c.getresponse().read()
                walls.append(time.perf_counter_ns() - t0)
            c1 = cpu()
            print(json.dumps({"what": "http", "input_ids": n, "body_bytes": len(b), "requests": reps,
                              "server_cpu_us_per_request": round(1e6 * (c1 - c0) / reps, 1),
                              "round_trip_us_p50": round(statistics.median(walls) / 1000, 1)}), flush=True)
    finally:
        srv.terminate()
        srv.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="2048,32768,131072")
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",")]
    print(json.dumps({"what": "load", "loadavg": os.getloadavg()}), flush=True)
    stages(sizes, a.reps)
    http_run(sizes, a.reps)
    print(json.dumps({"what": "load", "loadavg": os.getloadavg()}), flush=True)


if __name__ == "__main__":
    main()
