"""Model providers: one streaming client per API dialect, on httpx."""
