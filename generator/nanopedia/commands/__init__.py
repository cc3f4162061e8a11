"""Commands built on the pipeline (`serve`, `bundle`, `new`, `diff`, `verify`), and the terminal
side of every command (`entry_cli`, `log_cli`, `site_cli`), which `nanopedia/cli.py` runs."""
