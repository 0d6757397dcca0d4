"""The runtime host: one process per `OPENVAALA_HOME` that owns the database and serves every editor
connection (each an LSP session of its own) over a Unix socket, all sharing one `Runtime`."""
