"""The openvaala editor protocol 0.2: wire names, the one converter, the method registry, schemas."""

PROTOCOL_VERSION = "0.2"
