"""python -m kestrel: the kestrel command."""

import sys

from .cli import main

sys.exit(main())
