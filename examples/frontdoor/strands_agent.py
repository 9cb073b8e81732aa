"""A Strands agent with its OpenAI model provider, trained through agentrt unchanged.

The provider's client_args point the OpenAI client at one agentrt front-door session; the agent's tool loop,
streaming and message formatting are Strands' own. POST http://HOST/s/SESSION/end emits the session's trajectory.

    python strands_agent.py --server http://127.0.0.1:8080 --session ep-1 --task "What is 2 + 3?"

Prints one JSON line: the agent's final text and the session's trajectory ids.
"""
import argparse
import json
import urllib.request

from strands import Agent, tool
from strands.models.openai import OpenAIModel


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first integer
        b: the second integer
    """
    return a + b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--session", required=True)
    ap.add_argument("--model", default="qwen3")
    ap.add_argument("--task", required=True)
    ap.add_argument("--api-key", default="unused", help="server.token, when agentrt serve has one")
    a = ap.parse_args()
    model = OpenAIModel(client_args={"base_url": f"{a.server}/s/{a.session}/v1", "api_key": a.api_key, "max_retries": 0},
                        model_id=a.model, params={"max_tokens": 512})
    agent = Agent(model=model, tools=[add], system_prompt="You are a careful assistant. Use the add tool for sums.",
                  callback_handler=None)
    result = agent(a.task)
    req = urllib.request.Request(f"{a.server}/s/{a.session}/end", data=b'{"reward": 1.0}', method="POST",
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer " + a.api_key})
    with urllib.request.urlopen(req) as r:
        ended = json.load(r)
    print(json.dumps({"replies": [str(result).strip()], "trajectories": ended["trajectories"]}))


if __name__ == "__main__":
    main()
