"""The offline exit chooser: a fitted scorer over sentence embeddings and word cues that
takes an exit, stays, or asks which exit was meant, with no language model.

Imported only when the offline mode runs (numpy, the embedding model): `cgraph lint` and
`--help` never import it. `OfflineChooser` is in `cgraph.backends.offline.chooser`.
"""
