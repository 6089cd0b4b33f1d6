"""Deprecated alias of :mod:`agentkernel.storage.s3`, for one release."""

from agentkernel.storage.s3 import S3DocumentStore

__all__ = ["S3DocumentStore"]
