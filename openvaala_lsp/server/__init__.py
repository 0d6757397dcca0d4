"""The server: one `Connection` per editor, a pygls language server (`protocol.py` holds the few
fixes pygls needs here), translating requests into runtime calls and runtime errors into JSON-RPC
errors (`dispatch.py`). No runtime logic lives here."""
