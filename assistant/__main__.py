from __future__ import annotations

import sys

from assistant.cli import main

sys.exit(main())
