"""A scripted judge on the scripted OpenAI-compatible server: what `analyze --judge` is tested
against, over real HTTP with the real `openai` client and no model.

`ScriptedJudge(mistake=2)` answers every judge question (`analyzer/judge/questions.py`) as a
judge that knows the decisive step would: which step (all at once), whether this step (step by
step), which half (binary search). `faults` are sent first, one per request, in order: any turn
of `ScriptedOpenAIServer` (`{"content": "not JSON"}`, `{"status": 500}`), or `refusal()`.
`ScriptedJudgeServer(judge)` serves it and counts requests and TCP connections (a test that
nothing is sent asserts `connections == 0`).
"""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any, Callable, Mapping, Sequence

from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer


def refusal(text: str = "I can't help with that.") -> dict[str, Any]:
    """A turn answered with a refusal (structured outputs' `message.refusal`, no content)."""
    return {"body": {"id": "chatcmpl-refused", "object": "chat.completion", "created": int(time.time()),
                     "model": "scripted-judge",
                     "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                  "message": {"role": "assistant", "content": None, "refusal": text}}],
                     "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}}}


class ScriptedJudge:
    """A judge that blames step `mistake` (a position in the run, as the questions number them),
    or `mistake(question)`'s step for each question (a benchmark's oracle, keyed by its task)."""

    def __init__(self, mistake: int | Callable[[str], int], agent: str = "agent",
                 category: str = "Tool Output Misinterpretation",
                 reason: str = "it used the unit price where the total was needed",
                 faults: Sequence[Mapping[str, Any]] = ()):
        self.mistake = mistake
        self.agent, self.category, self.reason = agent, category, reason
        self.faults = list(faults)
        self.asked: list[tuple[str, Any]] = []  # (kind, what was asked: steps, a step, two halves)
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            question = _question_text(body)
            kind, subject, answer = self._answer(question)
            self.asked.append((kind, subject))
            if self.faults:
                return dict(self.faults.pop(0))
        return {"content": json.dumps(answer)}

    def _answer(self, question: str) -> tuple[str, Any, dict[str, Any]]:
        blame = {"agent": self.agent, "category": self.category, "reason": self.reason}
        mistake = self.mistake(question) if callable(self.mistake) else self.mistake
        halves = re.search(r"first half, steps (.+?), or in the second half, steps (.+?)\?", question)
        if halves:
            first, second = _steps(halves.group(1)), _steps(halves.group(2))
            return "half", (first, second), {"half": "first" if mistake in first else "second",
                                             "reason": self.reason}
        single = re.search(r"Did step (\d+) make the decisive mistake", question)
        if single:
            step = int(single.group(1))
            return "step", step, {"decisive": step == mistake, **blame}
        among = re.search(r"Which of the steps (.+?) made the decisive mistake", question)
        steps = _steps(among.group(1)) if among else []
        return "verdict", steps, {"step": mistake if mistake in steps or not steps else steps[0], **blame}


def _question_text(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    user = [m.get("content") for m in messages if m.get("role") == "user"]
    return str(user[-1]) if user else ""


def _steps(text: str) -> list[int]:
    ranged = re.fullmatch(r"(\d+) to (\d+)", text.strip())
    if ranged:
        return list(range(int(ranged.group(1)), int(ranged.group(2)) + 1))
    return [int(n) for n in re.findall(r"\d+", text)]


class ScriptedJudgeServer(ScriptedOpenAIServer):
    """`with ScriptedJudgeServer(ScriptedJudge(2)) as server: server.base_url, server.requests,
    server.connections`."""

    def __init__(self, judge: ScriptedJudge, **kwargs: Any):
        super().__init__({"*": [judge]}, **kwargs)
        self.judge = judge
        self.connections = 0
        accept = self._server.get_request

        def counted() -> Any:
            connection = accept()
            with self._lock:
                self.connections += 1
            return connection

        self._server.get_request = counted  # type: ignore[method-assign]
