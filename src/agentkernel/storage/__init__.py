"""Storage for document-shaped knowledge: bytes at bundle-relative paths."""
