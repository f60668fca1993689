"""The opening messages of an episode: a system prompt that describes the tools and the answer
format, then the task. The system prompt depends only on the tool set and mode, so an
inference server's prefix cache reuses it across every episode."""

from __future__ import annotations

__all__ = ["system_prompt"]

_INTRO = """You are a research agent. You answer questions by searching a web and reading its pages.
The people, organisations, places, works and products in the questions are not in your memory:
every fact you write must come from a page you found with the tools. Search results show short
snippets; open a page to read its full text. Directory pages list many entries and are split
into numbered pages (add ?page=N to the URL). Some pages are unreliable: prefer encyclopedia
articles and official registries to forums and blogs, and check names carefully."""

_TOOLS = {
    "search": "search(query, page=1): ranked results for a query, 10 per page.",
    "open": "open(url): the page at a URL, as Markdown.",
    "web_search": 'web_search({"queries": [...]}): results for up to 5 queries at once.',
    "web_extractor": 'web_extractor({"url": ...}): the content of a page, as Markdown.',
    "dict_memory": 'dict_memory({"action": ..., "key": ..., "value": ...}): your working memory for this task, '
    "kept across turns. Actions: add (a new key), update (an existing key), retrieve (one key), retrieve_all "
    "(everything, a page at a time: offset=N reads on), remove (one key), remove_all; several at once with "
    '"dict": {key: value, ...} (add, update) or "key_list": [...] (retrieve, remove). Store the rows and facts '
    "you find as you go, and read them back before you answer.",
    "answer": "answer(text): your final answer; it ends the task.",
}

_MEMORY_TAG = """dict_memory has no tag of its own: call it as JSON, e.g.
<tool_call>{"name": "dict_memory", "arguments": {"action": "add", "key": "...", "value": "..."}}</tool_call>"""

_FORMAT = """When you have everything, give the final answer in the format the task asks for: a
Markdown table inside a ```markdown code block, with exactly the requested columns in the
requested order and one row per item. Write values as they appear on the pages. You have a
limited number of turns; answer before they run out."""

_TAGS = """Call a tool by writing one of these in your reply (one call per tag, several tags allowed):
<search>your query</search>
<open>https://full.url/of/the/page</open>
<answer>your final answer</answer>
A JSON call also works: <tool_call>{"name": "search", "arguments": {"query": "..."}}</tool_call>.
A reply with no tool call is taken as your final answer."""


_REPLY_IS_ANSWER = "A reply with no tool call is taken as your final answer."
_CALL_ANSWER = "Always end by calling answer: a reply with no tool call ends the task with no answer."


def system_prompt(tools: tuple[str, ...], *, text_tags: bool = False, reply_is_answer: bool = True,
                  keep_observations: int | None = None) -> str:  # fmt: skip
    """The system prompt for ``tools``. ``reply_is_answer=False`` is the trainers' rule (their
    loops end a rollout on a reply without a tool call, unseen by the env): only ``answer``
    gives the answer. ``keep_observations=k`` says that only the last ``k`` tool outputs stay
    in view (the env's setting of that name)."""
    lines = [_INTRO, "", "Tools:"] + [f"- {_TOOLS[t]}" for t in tools] + ["", _FORMAT]
    if keep_observations is not None:
        keep = "" if "dict_memory" not in tools else " Keep what you will need in dict_memory."
        outputs = "tool output stays" if keep_observations == 1 else f"{keep_observations} tool outputs stay"
        lines += ["", f"Only your last {outputs} in view; older ones are replaced by a placeholder.{keep}"]
    if text_tags:
        lines += ["", _TAGS] + (["", _MEMORY_TAG] if "dict_memory" in tools else [])
    else:
        lines += ["", f"Call the tools as functions. {_REPLY_IS_ANSWER}"]
    text = "\n".join(lines)
    return text if reply_is_answer else text.replace(_REPLY_IS_ANSWER, _CALL_ANSWER)
