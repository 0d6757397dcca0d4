"""The command lines: `openvaala-lsp` (`lsp.py`, what an editor spawns: the front, or the runtime in
its own process) and `openvaala` (`main.py`: setup, doctor, demo, trust, and `sql.py`, `usage.py`,
`export.py`, which ask the runtime host). Nothing is imported here: the front starts from `lsp.py`
with the standard library alone."""
