"""The peer of bench_serve.py's slow-model rows: LangGraph's server (`langgraph dev`, run
from a virtualenv of its own) on the same fake model, a graph of one node that makes one
structured model call a turn, as cgraph's talk.yaml does.

Nothing of cgraph imports this file, and cgraph's environment need not have LangGraph:
`python bench/bench_serve.py --model-delay 1 --peer-langgraph VENV` writes a
`langgraph.json` naming this file's `graph` and starts `VENV/bin/langgraph dev` on it,
the fake model's address in `FAKE_MODEL_BASE`.
"""

from __future__ import annotations

import os
from typing import Literal

from langchain_core.messages import AIMessage
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from pydantic import BaseModel


class Answer(BaseModel):
    """What cgraph's action state asks its model for: the way out, why, and the reply."""

    exit: Literal["stay", "END"]
    reason: str
    reply: str


MODEL = ChatOpenAI(
    model="fake",
    base_url=os.environ.get("FAKE_MODEL_BASE", "http://127.0.0.1:8100/v1"),
    api_key="not-needed",  # type: ignore[arg-type]
    max_retries=0,
    timeout=120,
).with_structured_output(Answer, method="json_schema")


async def talk(state: MessagesState) -> dict[str, list[AIMessage]]:
    answer = await MODEL.ainvoke(state["messages"])
    return {"messages": [AIMessage(answer.reply)]}  # type: ignore[union-attr]


builder = StateGraph(MessagesState)
builder.add_node("talk", talk)
builder.add_edge(START, "talk")
builder.add_edge("talk", END)
graph = builder.compile()
