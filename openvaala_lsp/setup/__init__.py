"""Setting up model providers from the command line: `openvaala`, `openvaala setup`, `openvaala doctor`.

- `presets`: the providers offered and their defaults; builds the ModelDefinition.
- `configfile`: reads the user and project config files and saves a model (`save_model`), both
  through `openvaala_lsp.config`.
- `check`: one tiny real streamed request through the runtime's own provider code.
- `prompts`, `wizard`: the interactive walk-through (plain `input()`).
- `commands`: `setup` (flags), `doctor` and bare `openvaala`.
"""
