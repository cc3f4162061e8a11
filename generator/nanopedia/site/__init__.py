"""Pages out: the views, markdown, search index and feeds of a site, computed from a
linked catalog. Pure: no caches, git or processes."""
