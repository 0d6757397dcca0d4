"""Persistence: records (conversations, sessions, turns, pending inputs) and logs (items, model calls).

Storage knows nothing about models or JSON-RPC; it stores the attrs types of `openvaala_lsp.model`.
"""
