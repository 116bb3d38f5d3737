"""``python -m attn_contracts.cli``: the console script where it is not installed (the GPU machine's
``pip --target`` tree has no ``bin/`` on ``PATH``)."""

import sys

from attn_contracts.cli import main

sys.exit(main())
