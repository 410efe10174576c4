"""``python -m advisor.docgen``: rewrite (or, with ``--check``, list) the stale generated files."""

import sys

from advisor.docgen import main

sys.exit(main())
