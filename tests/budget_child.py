"""A child process making model calls through the parent's budget channel, as a sandboxed REPL's
``llm_query`` would: ``python -m tests.budget_child URL CALLS [die]``.

Each call is a real HTTP request to the Chat Completions server at ``URL`` (the recording stub),
reserved with :class:`longctx.graphs.metering.budget_client.BudgetClient` before it is sent and
settled with the usage the server returned. Prints one JSON line: the calls sent and the refusal, if
any. With ``die``, it takes a grant and kills itself before sending anything.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import urllib.request

from longctx.graphs.metering.budget import BudgetReached
from longctx.graphs.metering.budget_client import BudgetClient

MAX_TOKENS = 8


def post(url: str, prompt: str) -> dict:
    """One chat request of ``prompt``; the reply's JSON."""
    body = {
        "model": "stub",
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": MAX_TOKENS,
    }
    request = urllib.request.Request(
        f"{url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.loads(reply.read())


def main(url: str, calls: int, mode: str = "") -> None:
    client = BudgetClient.from_env()
    assert client is not None, "no budget channel ticket in the environment"
    sent, refused = 0, None
    for i in range(calls):
        prompt = f"question number {i} about the corpus"
        if mode == "die":
            client.reserve(prompt, max_completion_tokens=MAX_TOKENS)
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            with client.call(prompt, max_completion_tokens=MAX_TOKENS) as grant:
                reply = post(url, prompt)
                sent += 1
                grant.settle(reply["usage"])
        except BudgetReached as exc:
            refused = str(exc)
            break
    print(json.dumps({"sent": sent, "refused": refused}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), *sys.argv[3:])
