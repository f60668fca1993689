"""Judges for the compat scorer: where the official evaluator asks an LLM (align column names,
align key values, grade ``llm_judge`` columns) it asks a :class:`Judge`.

:class:`LLMJudge` asks an OpenAI-compatible endpoint with prompts of the same purpose and reply
format (a ```` ```json ```` block); :class:`FallbackJudge` is a deterministic stand-in used when
no endpoint is given (exact, normalised, then fuzzy matching), and results say so.
"""

from __future__ import annotations

import json
import re
from typing import Protocol

from rapidfuzz import fuzz, process

from fictionworld.llm import ChatClient
from fictionworld.scoring.metrics import clean_cell, strict_norm

__all__ = ["Judge", "FallbackJudge", "LLMJudge", "parse_json_block", "fuzzy_judge"]

_JSON_BLOCK = re.compile(r"```json\s*(\{.*?\})\s*```", re.DOTALL)


class Judge(Protocol):
    def align(self, values: list[str], reference: list[str]) -> dict[str, str]: ...

    def judge_column(self, responses: list[str], targets: list[str], criterion) -> list[float]: ...


def parse_json_block(text: str) -> dict | None:
    """The last ```json {...}``` block of a reply, or None."""
    found = _JSON_BLOCK.findall(text or "")
    if not found:
        return None
    try:
        data = json.loads(found[-1])
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _key(s: str) -> str:
    return "".join(ch for ch in str(s).lower() if ch.isalnum())


class FallbackJudge:
    """Deterministic alignment and grading: identical strings, then strings equal up to case,
    spaces and punctuation, then the closest reference with a fuzzy ratio of at least 90."""

    def align(self, values: list[str], reference: list[str]) -> dict[str, str]:
        ref = list(dict.fromkeys(str(r) for r in reference))
        by_key = {}
        for r in ref:
            by_key.setdefault(_key(r), r)
        out = {}
        for v in dict.fromkeys(str(x) for x in values):
            if v in ref:
                out[v] = v
            elif _key(v) and _key(v) in by_key:
                out[v] = by_key[_key(v)]
            else:
                best = process.extractOne(v, ref, scorer=fuzz.ratio, score_cutoff=90) if ref else None
                if best is not None:
                    out[v] = best[0]
        return out

    def judge_column(self, responses: list[str], targets: list[str], criterion) -> list[float]:
        return [fuzzy_judge(str(r), str(t)) for r, t in zip(responses, targets)]


class LLMJudge:
    """The official evaluator's LLM steps against any OpenAI-compatible endpoint."""

    def __init__(self, client: ChatClient, **params):
        self.client = client
        self.params = {"temperature": 0.0, **params}

    def _ask(self, prompt: str) -> dict | None:
        return parse_json_block(self.client.chat([{"role": "user", "content": prompt}], **self.params))

    def align(self, values: list[str], reference: list[str]) -> dict[str, str]:
        prompt = (
            "Align two vocabularies. For each value in the list to align, output the value of the "
            "reference list that means the same thing (identical strings always align); leave out "
            "values without a counterpart. Keep each original value exactly as written as the key.\n"
            f"List to align: {list(values)}\nReference list: {list(reference)}\n"
            'Reply with a ```json {"original": "reference", ...}``` block.'
        )
        data = self._ask(prompt) or {}
        return {str(k): str(v) for k, v in data.items()}

    def judge_column(self, responses: list[str], targets: list[str], criterion) -> list[float]:
        pairs = {f"idx_{i}": {"response": r, "target": t} for i, (r, t) in enumerate(zip(responses, targets))}
        prompt = (
            "You are a grader. Compare each response with its standard answer under the criterion "
            "and give 1 if it is correct, else 0 (integers only). Reason item by item, then end with "
            '```json {"idx_0": score, ...}```.\n'
            f"====== criterion-start ======\n{criterion}\n====== criterion-end ======\n"
            f"====== response-start ======\n{pairs}\n====== response-end ======"
        )
        data = self._ask(prompt)
        if data is None:
            return [0.0] * len(pairs)
        return [data.get(f"idx_{i}", 0) for i in range(len(pairs))]


def _singular(s: str) -> str:
    return s[:-1] if len(s) > 3 and s.endswith("s") and not s.endswith("ss") else s


def fuzzy_judge(r: str, t: str, aliases: tuple[str, ...] = ()) -> float:
    """The compat scorer's deterministic stand-in for an LLM judge: the same name or an alias
    of it, a plural, a reordering of the same words, or a near-identical spelling (ratio ≥ 92
    on strings of similar length), as a lenient LLM grader would. Never the RL reward: the
    strict scorer matches names without edit distance (decoys are one letter away)."""
    a = strict_norm(r)
    if not a:
        return 0.0
    for gold in (t, *aliases):
        b = strict_norm(gold)
        if not b:
            continue
        if a == b or _singular(a) == _singular(b):
            return 1.0
        ra = " ".join(clean_cell(r).casefold().split())
        rb = " ".join(clean_cell(gold).casefold().split())
        if abs(len(ra) - len(rb)) <= max(2, len(rb) // 10) and fuzz.token_sort_ratio(ra, rb) >= 92:
            return 1.0
    return 0.0
