"""Tools the model calls, run by an executor (today: the local process executor)."""
