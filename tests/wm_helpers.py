"""Scripted replies for the LLM world model tests: a small local HTTP server (not a model)
answers with pages made from the template text, faithful or broken on purpose."""

from __future__ import annotations

import json
import re

from fictionworld.surface import find_dates, format_date
from fictionworld.testing.scripted_openai import Reply

_URL = re.compile(r'"tool": "open", "url": "([^"]+)"')
_RESULT = re.compile(r"^\[\d+\] URL: (\S+)\nTitle: (.*)$", re.M)


def requested_url(request: dict) -> str | None:
    """The URL an ``open`` request asks for (its last action turn)."""
    text = request.get("text") or "\n".join(m["content"] for m in request.get("messages", []) if m["role"] == "user")
    found = _URL.findall(text)
    return found[-1] if found else None


def is_search(request: dict) -> bool:
    return "response_format" in request or "json_schema" in (request.get("sampling_params") or {})


def restyled(text: str) -> str:
    """The template text as another writer would put it: every date in another format and a
    sentence of framing that states nothing. Still faithful."""
    for d, span in find_dates(text):
        text = text.replace(span, format_date(d, 1), 1)
    return "Here is what the encyclopedia records.\n\n" + text


def results_json(request: dict, snippet: str = "Read about {t} on this page.") -> str:
    content = request.get("text") or request["messages"][1]["content"]
    return json.dumps({"results": [{"url": u, "title": t, "snippet": snippet.format(t=t)}
                                   for u, t in _RESULT.findall(content)]})  # fmt: skip


class Script:
    """A reply function for ScriptedOpenAIServer: pages from ``page(url, template_text, n)``
    (``n`` = how many times this URL was asked for), results from ``results(request, n)``."""

    def __init__(self, web, page=None, results=None):
        self.web = web
        self.page = page or (lambda url, text, n: wrap(restyled(text)))
        self.results = results or (lambda request, n: results_json(request))
        self.asked: dict[str, int] = {}

    def __call__(self, request: dict) -> Reply | str:
        if is_search(request):
            n = self.asked["search"] = self.asked.get("search", 0) + 1
            return self.results(request, n)
        url = requested_url(request)
        n = self.asked[url] = self.asked.get(url, 0) + 1
        return self.page(url, self.web.pages.text(self.web.pages.row_of_url[url]), n)


def wrap(body: str) -> str:
    return f"<think>Writing the page from the facts.</think>\n<predicted_observation>\n{body}\n</predicted_observation>"
