"""``python -m robotlab.demo``: run the offline demo."""

import sys

from robotlab.demo.main import main

sys.exit(main())
