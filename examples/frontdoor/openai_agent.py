"""An ordinary tool-calling agent written with the official `openai` SDK, trained through agentrt unchanged.

The only agentrt-specific line is base_url: http://HOST/s/SESSION/v1 makes every call of this agent one session, whose
token-exact trajectory agentrt streams to the trainer when the session ends (POST http://HOST/s/SESSION/end).

    python openai_agent.py --server http://127.0.0.1:8080 --session ep-1 --task "What is 2 + 3?"

Modes (the front-door tests run each against the emulator):
  tools      the SDK's tool-calling loop: call, run the tools the model asked for, send their results, repeat;
  objects    the same loop, appending the SDK's message objects themselves to the history;
  terse      the same loop, but the history keeps only content and tool calls of each reply (the model's
             reasoning is dropped, as Qwen3's own chat template drops it);
  stream     the tool loop with stream=True, the reply assembled from the chunks;
  responses  the tool loop on the Responses API, the output items appended to the input;
  chained    the Responses tool loop with previous_response_id (only the new items are sent);
  responses-stream  the Responses tool loop with stream=True (the reply from response.completed);
  summarise  two chat turns, then the history is replaced by a summary (the session's drift policy decides);
  structured one call whose reply must follow a JSON schema (the SDK's parse() with a pydantic model: agentrt
             constrains decoding with SGLang's json_schema).
With --mint instead of --session, the agent asks the server for a session id first (POST /v1/sessions), as a
server with frontdoor.session_ids = "minted" requires.
Prints one JSON line: the replies' contents and the session's trajectory ids.
"""
import argparse
import json
import urllib.request

from openai import OpenAI
from pydantic import BaseModel

TOOLS = [{
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                       "required": ["a", "b"]},
    },
}]


def add(a, b):
    return a + b


def streamed(client, **kw):
    """One streamed call, assembled as agents that stream do: content appended, tool calls by index."""
    content, calls = "", {}
    for chunk in client.chat.completions.create(stream=True, stream_options={"include_usage": True}, **kw):
        if not chunk.choices:
            continue
        d = chunk.choices[0].delta
        content += d.content or ""
        for tc in d.tool_calls or []:
            c = calls.setdefault(tc.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
            c["id"] += tc.id or ""
            c["function"]["name"] += tc.function.name or ""
            c["function"]["arguments"] += tc.function.arguments or ""
    msg = {"role": "assistant", "content": content or None}
    if calls:
        msg["tool_calls"] = [calls[i] for i in sorted(calls)]
    return msg


def tool_loop(client, model, task, terse, stream=False, objects=False, max_turns=8):
    messages = [{"role": "system", "content": "You are a careful assistant. Use the add tool for sums."},
                {"role": "user", "content": task}]
    replies = []
    for _ in range(max_turns):
        if stream:
            msg = streamed(client, model=model, messages=messages, tools=TOOLS, temperature=0.7)
            replies.append(msg["content"])
            messages.append(msg)
            if not msg.get("tool_calls"):
                return replies
            for tc in msg["tool_calls"]:
                args = json.loads(tc["function"]["arguments"])
                messages.append({"role": "tool", "tool_call_id": tc["id"], "content": str(add(**args))})
            continue
        resp = client.chat.completions.create(model=model, messages=messages, tools=TOOLS, temperature=0.7)
        msg = resp.choices[0].message
        replies.append(msg.content)
        if objects:  # the SDK serializes its own message object
            messages.append(msg)
        elif terse:  # keep what the API defines; drop the reasoning the server added
            kept = {"role": "assistant", "content": msg.content}
            if msg.tool_calls:
                kept["tool_calls"] = [tc.model_dump() for tc in msg.tool_calls]
            messages.append(kept)
        else:
            messages.append(msg.model_dump(exclude_none=True))
        if not msg.tool_calls:
            return replies
        for tc in msg.tool_calls:
            args = json.loads(tc.function.arguments)
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": str(add(**args))})
    return replies


RESPONSE_TOOLS = [{"type": "function", **t["function"]} for t in TOOLS]


def responses_create(client, stream, **kw):
    if not stream:
        return client.responses.create(**kw)
    for event in client.responses.create(stream=True, **kw):
        if event.type in ("response.completed", "response.incomplete"):
            return event.response
    raise RuntimeError("the stream ended without response.completed")


def responses_loop(client, model, task, chained, stream=False, max_turns=8):
    items = [{"role": "user", "content": task}]
    replies, prev = [], None
    for _ in range(max_turns):
        kw = {"previous_response_id": prev} if chained and prev else {"instructions": "You are a careful assistant. Use the add tool for sums."}
        resp = responses_create(client, stream, model=model, input=items, tools=RESPONSE_TOOLS, **kw)
        replies.append(resp.output_text)
        calls = [o for o in resp.output if o.type == "function_call"]
        results = [{"type": "function_call_output", "call_id": c.call_id, "output": str(add(**json.loads(c.arguments)))}
                   for c in calls]
        if chained:
            items, prev = results, resp.id
        else:
            items += [o.model_dump(exclude_none=True) for o in resp.output] + results
        if not calls:
            return replies
    return replies


def summarise(client, model, task):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": task}]
    replies = []
    for question in ["What is the capital of France?", None]:
        resp = client.chat.completions.create(model=model, messages=messages)
        replies.append(resp.choices[0].message.content)
        if question is None:
            break
        messages += [{"role": "assistant", "content": resp.choices[0].message.content},
                     {"role": "user", "content": question}]
    # The history grew too long for this agent's taste: it keeps a summary instead.
    summary = [messages[0], {"role": "user", "content": task + " (Summary so far: greetings; the capital of France is Paris.)"}]
    resp = client.chat.completions.create(model=model, messages=summary)
    replies.append(resp.choices[0].message.content)
    return replies


class Answer(BaseModel):
    answer: int


def structured(client, model, task):
    resp = client.chat.completions.parse(model=model, messages=[{"role": "user", "content": task}], response_format=Answer)
    msg = resp.choices[0].message
    return [msg.content, str(msg.parsed.answer)]


def mint(server, api_key):
    req = urllib.request.Request(f"{server}/v1/sessions", data=b"", method="POST", headers={"Authorization": "Bearer " + api_key})
    with urllib.request.urlopen(req) as r:
        return json.load(r)["session"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--session")
    ap.add_argument("--mint", action="store_true", help="ask the server for a session id (POST /v1/sessions)")
    ap.add_argument("--model", default="qwen3")
    ap.add_argument("--task", required=True)
    ap.add_argument("--api-key", default="unused", help="server.token, when agentrt serve has one")
    ap.add_argument("--mode", choices=["tools", "objects", "terse", "stream", "responses", "chained", "responses-stream", "summarise", "structured"], default="tools")
    a = ap.parse_args()
    if a.mint:
        a.session = mint(a.server, a.api_key)
    elif not a.session:
        ap.error("give --session or --mint")
    client = OpenAI(base_url=f"{a.server}/s/{a.session}/v1", api_key=a.api_key, max_retries=0)
    if a.mode == "summarise":
        replies = summarise(client, a.model, a.task)
    elif a.mode == "structured":
        replies = structured(client, a.model, a.task)
    elif a.mode in ("responses", "chained", "responses-stream"):
        replies = responses_loop(client, a.model, a.task, chained=a.mode == "chained", stream=a.mode == "responses-stream")
    else:
        replies = tool_loop(client, a.model, a.task, terse=a.mode == "terse", stream=a.mode == "stream", objects=a.mode == "objects")
    # The episode is over: end the session, and its trajectories go to the trainer.
    req = urllib.request.Request(f"{a.server}/s/{a.session}/end", data=b'{"reward": 1.0}', method="POST",
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer " + a.api_key})
    with urllib.request.urlopen(req) as r:
        ended = json.load(r)
    print(json.dumps({"replies": replies, "trajectories": ended["trajectories"]}))


if __name__ == "__main__":
    main()
