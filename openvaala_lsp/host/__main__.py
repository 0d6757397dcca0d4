import sys

from openvaala_lsp.host.main import main

sys.exit(main())
