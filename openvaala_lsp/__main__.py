import sys

from openvaala_lsp.cli.lsp import main

sys.exit(main())
