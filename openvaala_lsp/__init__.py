"""openvaala: a coding-agent runtime hosted by editors. Imports nothing heavy (the front imports through it)."""

__version__ = "0.2.0"
