"""Tool binding internals shared by every framework adapter and both MCP servers.

- :mod:`.spec`: a tool callable in, a :class:`~.spec.ToolSpec` out (the one docstring parser);
- :mod:`.schema`: the spec's parameters as one pydantic model, its JSON Schema, argument checks;
- :mod:`.bind`: the base of the framework adapters (``ToolBuilder``) and their helpers;
- :mod:`.result`: :class:`~.result.ToolResult`, tool output text that knows it is an error;
- :mod:`.factory`: the one tool factory, a function in, a tool that never raises out
  (``KnowledgeBuilder.build()`` and ``create_knowledge_tools`` make every tool there);
- :mod:`.budget`: the answer budget and the cuts that say how to read on.

Nothing is imported here, so importing one module stays as light as that module.
"""
