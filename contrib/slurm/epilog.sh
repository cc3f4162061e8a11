#!/bin/sh
# Nanopedia's Slurm Epilog: when a batch job ends, the verdict on its output is written beside
# it (`slurm-123.out` -> `slurm-123.out.nanopedia.txt`) if a known failure matched.
#
# Install on every compute node, with nanopedia installed where this names it:
#   cp contrib/slurm/epilog.sh /etc/slurm/epilog.d/50-nanopedia.sh   # executable, owned by root
#   slurm.conf:  Epilog=/etc/slurm/epilog.d/*     (Slurm 22.05+ runs every file the glob names)
#   scontrol reconfigure
# slurmd runs it as root with the job in its environment (no PATH); the diagnosis runs as the
# job's user, reads only the job's output and takes at most 60 s. slurmd logs the one line it
# prints at SlurmdDebug=debug2. README.md, "Where jobs fail", says what it writes and when.

NANOPEDIA_PYTHON=/opt/nanopedia/bin/python  # the interpreter nanopedia is installed in

"$NANOPEDIA_PYTHON" -m nanopedia.hooks.slurm
exit 0  # an Epilog that fails drains the node: whatever happened above, this one does not fail
