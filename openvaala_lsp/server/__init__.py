"""The server: one `Connection` per editor (the LSP lifecycle over `peer.Peer`, JSON-RPC 2.0 on LSP
frames), translating requests into runtime calls and runtime errors into JSON-RPC errors
(`dispatch.py`). No runtime logic lives here."""
