"""What travels between the package's processes, in one place: LSP frames (`framing.py`, the one
reader and writer of the front, the server and the client; standard library only, as the front
imports it), compact JSON for the hot paths (`compact_json.py`, orjson), the hello between a front
and the runtime host (`hello.py`), and the package's LSP client (`client.py`), which `openvaala sql`,
`openvaala demo` and the tests speak. Nothing is imported here: the front stays on the standard
library."""
