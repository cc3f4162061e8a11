"""The MkDocs plugin: the encyclopedia inside an existing MkDocs site."""
