"""The thin front: the process an editor spawns as `openvaala-lsp`. Standard library only.

It relays the editor's LSP frames to the user's runtime host over a Unix socket, starting the host
when none runs and restarting it (replaying the editor's `initialize`) when it dies. Its modules are
also the host's source for the run directory, the hello and the version policy, so both sides agree.
"""
