"""Storage: the ``Store`` facade over Qdrant (Edge embedded, local mode, or a server), the query snapshots readers answer from, the in-process search index, and dense codes for large collections."""
