"""Instructions for a knowledge-base router agent (the manual's "KB Router Pattern").

Framework-neutral text: pass it as the instructions of an OpenAI Agents SDK ``Agent``, a
CrewAI backstory, an ADK instruction or a LangGraph system prompt. It tells the agent to read
the declarations instead of assuming which tools exist.
"""

from __future__ import annotations

ROUTER_INSTRUCTIONS = """\
You have access to one or more knowledge bases.
Use get_schemas() to inspect them first, then decide which backend to read from or write to.
Use read_kb for retrieval and write_kb for persistence.
Where browse_kb, fetch_kb or search_kb are available, prefer browsing a namespace and fetching by
identity over guessing search terms; get_schemas() tells you what each backend declares.
A backend that declares itself read-only (writable: false, such as Starburst) declines write_kb:
route writes elsewhere.
When a placeholder such as <MONGO_SOURCE> appears in a query, keep it unchanged in the query;
the semantic_map resolves it to the correct backend target at runtime.
Cite the ids of the records you used, and say when the knowledge bases do not hold the answer."""


def router_instructions(extra: str = "") -> str:
    """Return the router instructions, with application-specific text appended.

    Args:
        extra: More instructions (routing rules for your backends, a persona, ...).

    Returns:
        The instructions.
    """
    return f"{ROUTER_INSTRUCTIONS}\n\n{extra.strip()}" if extra.strip() else ROUTER_INSTRUCTIONS
