"""The pygls server: translates JSON-RPC requests into runtime calls and runtime errors into JSON-RPC
errors. No runtime logic lives here."""
