"""The ACP front: `openvaala-lsp --acp` speaks the Agent Client Protocol v1 (newline-delimited JSON-RPC)
to an editor and is itself an LSP-framed client of the user's runtime host (or of a runtime in its own
process with `--standalone`). It only translates: docs/ACP.md has the mapping."""
