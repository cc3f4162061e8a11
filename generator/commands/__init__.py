"""Commands built on the pipeline: `serve`, `bundle`, `new`, `diff` and `verify`."""
