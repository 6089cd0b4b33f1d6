"""A shared OKF bundle index: a Lance dataset beside the bundle, built once, read by every pod.

:func:`~agentkernel.knowledgebase.okf.bundleindex.indexer.index_bundle` lists a bundle,
reads only the documents whose change token moved since the index was built and commits
upserts and deletes as one new version of the dataset. ``OKFManager(store, index=URI)``
then serves search, browse and the schema from that dataset
(:class:`~agentkernel.knowledgebase.okf.bundleindex.view.IndexView`) instead of walking the
bundle itself; fetch still reads bodies from the document store.

The ``lancedb`` SDK (the ``lancedb`` extra) is imported by :mod:`.lancesdk` alone, on first use.
"""
