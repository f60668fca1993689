"""Reasoning blocks: what an agent thinks aloud is never read as a call or as its answer.

One rule for every way an agent's text reaches the env (text tags, ``<tool_call>`` blocks, a
reply taken as the answer, the last words of a truncated episode) and every trainer adapter
(verl's decoded response, SkyRL's raw turns, verifiers' last reply, TRL's ``answer`` argument):

- a ``<think>…</think>`` block (or ``<thinking>…</thinking>``) is reasoning;
- a closing tag with no opening one before it closes a block that began where the text began,
  or where the last block ended: chat templates (DeepSeek-R1, QwQ, Qwen3's thinking variants)
  open the block in the generation prompt, so the decoded reply holds only its end;
- an opening tag that is never closed runs to the end of the text: a reply cut off mid-thought.

>>> without_reasoning("<think>maybe <answer>X</answer>?</think><search>Y</search>")
'<search>Y</search>'
>>> without_reasoning("it is X</think>\\n<answer>Y</answer>")
'\\n<answer>Y</answer>'
>>> without_reasoning("<answer>Y</answer><think>or <answer>X</answer>")
'<answer>Y</answer>'
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["without_reasoning", "last_words", "REASONING_TAGS"]

REASONING_TAGS = ("think", "thinking")
_TAG = re.compile(r"<(/?)(think|thinking)>")


def without_reasoning(text: str) -> str:
    """``text`` less its reasoning blocks (see the module's rule; where one stood between two
    pieces of text, a space), in linear time."""
    if "think" not in text:
        return text
    kept: list[str] = []
    start, inside = 0, None  # start: where the text kept next begins; inside: the open block's tag
    for m in _TAG.finditer(text):
        closing, tag = m.group(1) == "/", m.group(2)
        if inside is None and closing:  # no opening before it: all since ``start`` was reasoning
            start = m.end()
        elif inside is None:
            kept.append(text[start : m.start()])
            inside = tag
        elif closing and tag == inside:
            inside, start = None, m.end()
    if inside is None:
        kept.append(text[start:])
    # the pieces hold no tag, and a space between them makes none: the rule is idempotent
    return " ".join(piece for piece in kept if piece)


def last_words(texts: Iterable[str | None]) -> str | None:
    """Of an agent's texts, newest first, the first with anything outside reasoning, less its
    reasoning: what an episode that ends without an answer call is scored on. None when no text
    holds any."""
    for text in texts:
        if isinstance(text, str) and (words := without_reasoning(text)).strip():
            return words
    return None
