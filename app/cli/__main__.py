"""`python -m app.cli`: the same as `pico-teleop`."""

import sys

from app.cli import main

sys.exit(main())
