"""Corrupted observations for negative examples: one kind of damage each, applied to what the
web really returned (an :class:`~.lwm_observe.Observed`): a value changed, two values swapped, a
fact dropped, a name turned into a namesake (the confusable-name rule of the perturbation
layers), a hedge ("some sources say …"), the layout broken, an empty observation, two results
swapped, a page invented where the web had none."""

from __future__ import annotations

import random
import re

from fictionworld.surface import find_dates, find_numbers
from fictionworld.web.perturb import confusable_name
from fictionworld.worldmodel.lwm_check import HEAD
from fictionworld.worldmodel.lwm_observe import Observed
from fictionworld.worldmodel.verify import LINK, Verifier

__all__ = ["corrupt", "CORRUPTIONS"]

CORRUPTIONS = ("value_changed", "facts_swapped", "fact_dropped", "namesake", "hedged", "format_broken", "empty",
               "results_swapped", "page_invented")  # fmt: skip


def corrupt(verifier: Verifier, obs: Observed, kind: str, r: random.Random) -> str | None:
    """``obs``'s text with one corruption of ``kind`` (None where it does not apply)."""
    text = obs.text
    head = HEAD.match(text)
    start = head.end() if head else 0
    if kind == "empty":
        return ""
    if kind == "page_invented":
        if obs.status == "ok":
            return None
        row = r.randrange(len(verifier.web.pages))
        return verifier.web.pages.page(row, verifier.web.entity_ids).markdown()
    if obs.status != "ok":
        return None
    if kind == "format_broken":
        if obs.parts:
            out = re.sub(r"^\[\d+\] ", "", text, flags=re.M).replace("\nTitle: ", "\n")
        else:
            out = text[start:] if head else None
        return out if out != text else None
    if kind == "results_swapped":
        blocks = [(m.start(2), m.end(2)) for m in re.finditer(r"^\[(\d+)\] (\S+)$", text, re.M)]
        if len(blocks) < 2:
            return None
        (a0, a1), (b0, b1) = sorted(r.sample(blocks, 2))
        return text[:a0] + text[b0:b1] + text[a1:b0] + text[a0:a1] + text[b1:]
    if kind == "fact_dropped":
        lines = [i for i, line in enumerate(text.splitlines()) if i > 5 and (LINK.search(line) or _has_value(line))]
        if obs.parts:
            lines = [i for i, line in enumerate(text.splitlines()) if line.startswith("Snippet: ")]
        if not lines:
            return None
        drop = r.choice(lines)
        return "\n".join(x for i, x in enumerate(text.splitlines()) if i != drop) + "\n"
    if kind == "namesake":
        names = [m.group(1) for m in LINK.finditer(text, start) if len(m.group(1)) >= 5]
        real = set(verifier.names)
        for name in r.sample(names, len(names)):
            other = confusable_name(name, r, real)
            if other:
                return text[:start] + text[start:].replace(name, other)
        return None
    spans = _value_spans(text, start)
    if kind == "value_changed" and spans:
        a, b, v = r.choice(spans)
        return text[:a] + _changed(text[a:b], v, r) + text[b:]
    if kind == "hedged" and spans:
        a, b, v = r.choice(spans)
        return text[:b] + f" (some sources say {_changed(text[a:b], v, r)})" + text[b:]
    if kind == "facts_swapped":
        for _ in range(10):
            if len(spans) < 2:
                return None
            (a0, a1, v0), (b0, b1, v1) = sorted(r.sample(spans, 2))
            if type(v0) is type(v1) and v0 != v1 and a1 <= b0:
                return text[:a0] + text[b0:b1] + text[a1:b0] + text[a0:a1] + text[b1:]
    return None


def _has_value(line: str) -> bool:
    return bool(find_dates(line) or find_numbers(line))


def _value_spans(text: str, start: int) -> list[tuple[int, int, object]]:
    """(start, end, value) of each date and number written in the body (not in URLs, links' targets
    or the ``[n]`` numbers of results)."""
    out, taken = [], []
    for m in re.finditer(r"https?://\S+|\]\([^)]*\)|^\[\d+\] ", text, re.M):  # URLs, link targets, result numbers
        taken.append((m.start(), m.end()))
    body = text[start:]
    for d, span in find_dates(body):
        i = body.find(span)
        out.append((start + i, start + i + len(span), d))
        taken.append((start + i, start + i + len(span)))
    for m in re.finditer(r"(?<![\w.\-])\$?\d[\d,]*(?:\.\d+)?", body):
        a, b = start + m.start(), start + m.end()
        if any(x <= a < y for x, y in taken) or len(m.group(0).strip("$,")) < 2:
            continue
        out.append((a, b, float(m.group(0).strip("$").replace(",", ""))))
    return sorted(out, key=lambda s: s[0])


def _changed(span: str, value, r: random.Random) -> str:
    """``span`` (a date or number as written) with another value, written the same way."""
    digits = [i for i, ch in enumerate(span) if ch.isdigit()]
    if hasattr(value, "year"):
        y = str(value.year)
        i = span.find(y)
        return span[:i] + str(value.year + r.choice([-1, 1]) * r.randint(3, 40)) + span[i + len(y) :]
    i = digits[0]
    new = str((int(span[i]) % 9) + 1)
    return span[:i] + new + span[i + 1 :]
