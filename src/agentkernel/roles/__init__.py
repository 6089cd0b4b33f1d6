"""Configuration-driven OKF: bundles named in config.yaml, reached by agents through roles.

``OKFCapability`` is the framework-free core; the framework modules attach its tools and
instructions to agents. Nothing here opens a store until an agent's tool first touches it.
"""

from agentkernel.roles.capability import ROLES, OKFCapability

__all__ = ["ROLES", "OKFCapability"]
