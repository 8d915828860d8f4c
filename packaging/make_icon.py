"""Write packaging/pico-teleop.png (256 px) from the icon the app draws itself (app/gui/icon.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from PySide6.QtGui import QGuiApplication  # noqa: E402

from app.gui.icon import icon_image  # noqa: E402


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("pico-teleop.png")
    app = QGuiApplication.instance() or QGuiApplication([sys.argv[0]])  # noqa: F841 (fonts, image plugins)
    if not icon_image(256).save(str(out), "PNG"):
        print(f"cannot write {out}", file=sys.stderr)
        return 1
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
