"""The support agent of support_agent.py calling its model through litellm.

`handle_ticket` is support_agent's loop given a client whose `chat.completions.create` is
`litellm.completion` (or `acompletion`) routed to the scripted server as an OpenAI-compatible
provider (`openai/<model>`, `api_base`), with the local model cost map (no network at import).
"""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import support_agent  # noqa: E402
from support_agent import SCRIPTS, answer_tickets  # noqa: E402


def litellm_client(base_url: str, is_async: bool = False) -> Any:
    """An object with `chat.completions.create(model=..., **kwargs)` that calls litellm."""
    import litellm

    call = litellm.acompletion if is_async else litellm.completion

    def create(model: str, **kwargs: Any) -> Any:
        return call(model=f"openai/{model}", api_base=base_url, api_key="scripted", **kwargs)

    return SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))


def handle_ticket(client: Any, ticket: str) -> str:
    return support_agent.handle_ticket(client, ticket)


def main() -> int:
    from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

    with ScriptedOpenAIServer(SCRIPTS) as server:
        client = litellm_client(server.base_url)
        answer_tickets(lambda ticket: handle_ticket(client, ticket))
    return 0


if __name__ == "__main__":
    import litellm_agent

    sys.exit(litellm_agent.main())
