"""The incremental engine: the only place that knows caches, build state, git history,
worker processes and the disk writes of a site."""
