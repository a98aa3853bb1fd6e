"""A LangChain chat model on a backend we do not patch: a `BaseChatModel` that answers from
support_agent's scripts in process (as an Ollama, Bedrock or in-house model would, through no
client of ours), with LangChain's own `AIMessage.tool_calls` and `usage_metadata`."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

MODEL = "scripted-chat"
LATENCY = 0.02  # seconds each answer takes: the chat span must cover it


class ScriptedChatModel(BaseChatModel):
    """Answers the conversation's script turn by turn (turn = assistant messages so far); call ids
    `call_{turn}_{i}` as the scripted server gives them. `fail_on`: a text whose conversation
    raises `ConnectionError` (the backend down)."""

    scripts: dict[str, Any]
    model: str = MODEL
    fail_on: str | None = None

    @property
    def _llm_type(self) -> str:
        return "scripted-chat"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _answer(self, messages: list[BaseMessage]) -> ChatResult:
        first = next((m.content for m in messages if m.type == "human"), "")
        if self.fail_on and self.fail_on in str(first):
            raise ConnectionError("scripted backend unreachable")
        turn_index = sum(1 for m in messages if m.type == "ai")
        turn = ScriptedOpenAIServer(self.scripts).turn_for({"messages": [{"role": "user", "content": first}]
                                                            + [{"role": "assistant"}] * turn_index})
        calls = [{"name": c["name"], "args": c["arguments"], "id": f"call_{turn_index}_{i}", "type": "tool_call"}
                 for i, c in enumerate(turn.get("tool_calls") or ())]
        message = AIMessage(content=turn.get("content") or "", tool_calls=calls, id=f"scripted-{turn_index}",
                            usage_metadata={"input_tokens": 10 * len(messages), "output_tokens": 7,
                                            "total_tokens": 10 * len(messages) + 7},
                            response_metadata={"model_name": self.model,
                                               "finish_reason": "tool_calls" if calls else "stop"})
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        time.sleep(LATENCY)
        return self._answer(messages)

    async def _agenerate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                         **kwargs: Any) -> ChatResult:
        await asyncio.sleep(LATENCY)
        return self._answer(messages)
