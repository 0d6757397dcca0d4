"""The runtime core: conversations, sessions, turns, subscriptions. Knows nothing of JSON-RPC."""
