"""Entry point of the PyInstaller bundle: the same `main` as the `pico-teleop` console script.

`freeze_support` lets the bundle start the humanoid stream's process and the recording process
(multiprocessing's "spawn" runs the bundle's executable again with its own arguments)."""

import multiprocessing
import sys

from app.cli import main

if __name__ == "__main__":
    multiprocessing.freeze_support()
    sys.exit(main())
