import sys

from openvaala_lsp.cli import main

sys.exit(main())
