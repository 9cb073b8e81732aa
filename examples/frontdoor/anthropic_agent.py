"""A tool-calling agent written with the official `anthropic` SDK, trained through agentrt unchanged.

The only agentrt-specific line is base_url: http://HOST/s/SESSION makes every call one session of agentrt's front
door; POST http://HOST/s/SESSION/end emits its token-exact trajectory to the trainer.

    python anthropic_agent.py --server http://127.0.0.1:8080 --session ep-1 --task "What is 2 + 3?" [--stream]

Prints one JSON line: the text of each reply and the session's trajectory ids.
"""
import argparse
import json
import urllib.request

import anthropic

TOOLS = [{
    "name": "add",
    "description": "Add two integers.",
    "input_schema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                     "required": ["a", "b"]},
}]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--session", required=True)
    ap.add_argument("--model", default="qwen3")
    ap.add_argument("--task", required=True)
    ap.add_argument("--api-key", default="unused", help="server.token, when agentrt serve has one")
    ap.add_argument("--stream", action="store_true")
    a = ap.parse_args()
    client = anthropic.Anthropic(base_url=f"{a.server}/s/{a.session}", api_key=a.api_key, max_retries=0)
    messages = [{"role": "user", "content": a.task}]
    replies = []
    for _ in range(8):
        kw = dict(model=a.model, max_tokens=512, system="You are a careful assistant. Use the add tool for sums.",
                  messages=messages, tools=TOOLS)
        if a.stream:
            with client.messages.stream(**kw) as s:
                resp = s.get_final_message()
        else:
            resp = client.messages.create(**kw)
        replies.append("".join(b.text for b in resp.content if b.type == "text"))
        messages.append({"role": "assistant", "content": resp.content})
        if resp.stop_reason != "tool_use":
            break
        results = [{"type": "tool_result", "tool_use_id": b.id, "content": str(b.input["a"] + b.input["b"])}
                   for b in resp.content if b.type == "tool_use"]
        messages.append({"role": "user", "content": results})
    req = urllib.request.Request(f"{a.server}/s/{a.session}/end", data=b'{"reward": 1.0}', method="POST",
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer " + a.api_key})
    with urllib.request.urlopen(req) as r:
        ended = json.load(r)
    print(json.dumps({"replies": replies, "trajectories": ended["trajectories"]}))


if __name__ == "__main__":
    main()
