"""The bundle core: the on-disk format both the OKF knowledge base and the curated store keep.

A bundle is markdown documents with YAML frontmatter, ``index.md`` and ``log.md``, in a
:class:`~agentkernel.storage.DocumentStore`. This package sits above ``storage/`` and below
``knowledgestore/`` and ``knowledgebase/``, which both import it:

* :mod:`.links`: the one markdown link parser (links inside code fences are no links);
* :mod:`.catalog`: ``index.md``, rendered (its lines and sections; the caller decides which);
* :mod:`.logfile`: ``log.md``, parsed and written;
* :mod:`.listing`: what a store holds, kept current by its change tokens;
* :mod:`.timestamps`: OKF timestamps, read strictly (ISO 8601 with a UTC offset).
"""
