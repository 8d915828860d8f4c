"""Entry point of the PyInstaller bundle: the same `main` as the `pico-teleop` console script."""

import sys

from app.cli import main

if __name__ == "__main__":
    sys.exit(main())
