"""Executors: where a conversation's tools run (`local`: this machine; `ssh`: a remote host)."""
