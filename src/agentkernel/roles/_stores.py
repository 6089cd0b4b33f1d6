"""Curated stores in ``config.yaml``: the OKF roles applied to a store's ``knowledge_*`` tools.

=========  ==========================================================================
role       tools
=========  ==========================================================================
consumer   ``knowledge_index``, ``knowledge_search``, ``knowledge_read``
producer   the same, plus ``knowledge_create``, ``knowledge_edit``, ``knowledge_rewrite``,
           ``knowledge_supersede``, ``knowledge_log``
curator    the same, plus ``knowledge_retire`` (asks the person first; only where a person
           can be asked, over MCP) and ``knowledge_check``
=========  ==========================================================================

A store is opened the first time any agent's tool touches it (or a server opens it at
startup), then shared by every agent holding a role in it. The ``knowledge_*`` tools carry no
store argument, so an agent holds a role in at most one store.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentkernel.config import StoreConfig
from agentkernel.errors import AKConfigError

if TYPE_CHECKING:
    from agentkernel.knowledgestore.base import KnowledgeStore

READING = ("knowledge_index", "knowledge_search", "knowledge_read")
WRITING = (
    "knowledge_create",
    "knowledge_edit",
    "knowledge_rewrite",
    "knowledge_supersede",
    "knowledge_log",
)
CURATING = ("knowledge_retire", "knowledge_check")

#: The tools each role is given in a store, in the order a store offers them.
STORE_TOOLS: Mapping[str, tuple[str, ...]] = {
    "consumer": READING,
    "producer": READING + WRITING,
    "curator": READING + WRITING + CURATING,
}

_ROLE_SENTENCES: Mapping[str, str] = {
    "consumer": "Read it: start at knowledge_index or knowledge_search and read only the pages "
    "a task needs.",
    "producer": "Read it and add to it: create pages, edit rather than rewrite, and log each "
    "finished operation with knowledge_log.",
    "curator": "Maintain it: correct and supersede pages, fix what knowledge_check reports, "
    "and retire a page only with the person's consent (knowledge_retire asks them).",
}


def check_roles(kind: str, name: str, entry: Any) -> None:
    """Refuse an entry nobody can reach, or one agent as both producer and curator of it.

    Args:
        kind: ``database`` or ``store``, as the message names it.
        name: The entry's name.
        entry: Its configuration (``consumer``, ``producer`` and ``curator`` lists).

    Raises:
        AKConfigError: Naming the entry and what to change.
    """
    if not any(getattr(entry, role) for role in STORE_TOOLS):
        raise AKConfigError(
            f"okf {kind} {name!r} names no agent: list at least one under consumer, producer "
            f"or curator (a {kind} nobody can reach is a mistake)."
        )
    both = sorted(set(entry.producer) & set(entry.curator))
    if both:
        raise AKConfigError(
            f"okf {kind} {name!r} names {both} as both producer and curator; give each agent "
            f"one role per {kind}."
        )


class Stores:
    """The ``stores`` of an ``okf`` block: validated at once, each opened on first use."""

    def __init__(
        self,
        stores: Mapping[str, StoreConfig],
        databases: Mapping[str, Any],
        base_dir: Path | None,
    ) -> None:
        """Validate the stores; opens none.

        Args:
            stores: The configured stores by name.
            databases: The configured bundles by name (a store may not share a name).
            base_dir: Where relative folder paths resolve (the config file's folder).

        Raises:
            AKConfigError: A store names no agent, names an agent as both producer and
                curator, shares a bundle's name, or an agent holds roles in two stores.
        """
        holder: dict[str, str] = {}
        for name, entry in stores.items():
            if name in databases:
                raise AKConfigError(
                    f"okf store {name!r} has the name of a database: give each its own name "
                    "(both are named in tools, the audit and the metrics)."
                )
            check_roles("store", name, entry)
            for agent in dict.fromkeys(entry.consumer + entry.producer + entry.curator):
                if agent in holder:
                    raise AKConfigError(
                        f"Agent {agent!r} holds roles in two stores ({holder[agent]!r} and "
                        f"{name!r}): the knowledge_* tools name no store, so an agent reaches "
                        "at most one."
                    )
                holder[agent] = name
        self._entries = dict(stores)
        self._base_dir = base_dir
        self._opened: dict[str, KnowledgeStore] = {}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        """Every configured store name, in configuration order."""
        return list(self._entries)

    def agents(self) -> list[str]:
        """Every agent named in any store, in first-mention order."""
        seen: dict[str, None] = {}
        for entry in self._entries.values():
            for role in STORE_TOOLS:
                seen.update(dict.fromkeys(getattr(entry, role)))
        return list(seen)

    def role_of(self, agent: str) -> tuple[str, str] | None:
        """The store the agent holds a role in, and that role.

        Args:
            agent: The agent's name.

        Returns:
            ``(store, role)``, or ``None`` when the agent reaches no store.
        """
        for name, entry in self._entries.items():
            for role in ("curator", "producer", "consumer"):
                if agent in getattr(entry, role):
                    return name, role
        return None

    def store(self, name: str) -> KnowledgeStore:
        """The named store, opened on first use and shared.

        Args:
            name: A store name from the block.

        Returns:
            The store.

        Raises:
            AKConfigError: No such store, or its location cannot be opened.
        """
        found = self._opened.get(name)
        if found is not None:
            return found
        entry = self._entries.get(name)
        if entry is None:
            raise AKConfigError(f"No okf store named {name!r}. Configured: {self.names()}")
        with self._lock:
            if name not in self._opened:
                from agentkernel.knowledgestore.locations import open_store

                self._opened[name] = open_store(entry.uri, base_dir=self._base_dir)
            return self._opened[name]

    def tools_for(self, agent: str) -> list[Callable[..., str]]:
        """The agent's ``knowledge_*`` tools, as its role in its store allows.

        ``knowledge_retire`` is not among them: it asks the person first, which only a
        server that can ask offers (:func:`agentkernel.mcp.store.store_tools`).

        Args:
            agent: The agent's name.

        Returns:
            The tools (plain callables that never raise); none for an agent in no store.
            Building them opens the store (it reads the declared page types).
        """
        held = self.role_of(agent)
        if held is None:
            return []
        from agentkernel.knowledgestore.tools import create_knowledge_tools

        name, role = held
        allowed = set(STORE_TOOLS[role])
        tools = create_knowledge_tools(self.store(name))
        return [tool for tool in tools if tool.__name__ in allowed]

    def instructions_for(self, agent: str) -> str:
        """The lines appended to the agent's instructions for its store; ``""`` for none.

        Args:
            agent: The agent's name.

        Returns:
            What the store is and what the agent's role asks of it.
        """
        held = self.role_of(agent)
        if held is None:
            return ""
        name, role = held
        entry = self._entries[name]
        about = f" ({entry.description})" if entry.description else ""
        return (
            "## Your curated knowledge store\n"
            f"- '{name}'{about}: you are its {role}. {_ROLE_SENTENCES[role]} Its pages are "
            "typed and addressed by id (type/slug), linked with [text](type/slug)."
        )

    def opened(self) -> dict[str, KnowledgeStore]:
        """The stores opened so far, by name."""
        return dict(self._opened)

    def open_all(self) -> None:
        """Open every store now (a server does, so that a bad location fails at startup)."""
        for name in self._entries:
            self.store(name)
