"""The openvaala editor protocol 0.3: wire names, the one converter, the method registry, schemas."""

PROTOCOL_VERSION = "0.3"
