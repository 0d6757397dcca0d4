"""Checkpoints of the workspace: a shadow git repository per workspace folder (`shadow.py`, run with
`git.py`'s hardened git), snapshots of it before and after what a turn does, the `FileChange`s
between two snapshots (`diffs.py`), and writing a snapshot's files back (`restore.py`). Where the
repositories live and whether git is there at all: `store.py`."""
