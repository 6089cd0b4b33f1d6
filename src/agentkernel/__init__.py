"""agentkernel: durable, cross-session knowledge for AI agents.

The package root holds no logic: importing it does no I/O and pulls in no optional SDK.
Start at :mod:`agentkernel.knowledgebase`.
"""

__version__ = "0.1.0"
