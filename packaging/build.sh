#!/usr/bin/env bash
# Build the one-folder bundle dist/pico-teleop/ with PyInstaller, then run its self-check headless.
# With dm-robotics-panda installed for $PYTHON (pip install --no-deps dm-robotics-panda==0.4.8), the
# bundle carries Franka's meshes and draws the arms with them.
#
#   packaging/build.sh                  # uses $PYTHON (default: python3) with pyinstaller installed
#   DIST_DIR=/tmp/d WORK_DIR=/tmp/w packaging/build.sh
#
# The bundle carries the .desktop entry and the icon; to install for the current user:
#   cp packaging/pico-teleop.desktop ~/.local/share/applications/ (with Exec= pointing at the bundle)
#   cp packaging/pico-teleop.png ~/.local/share/icons/hicolor/256x256/apps/
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
DIST_DIR="${DIST_DIR:-$ROOT/dist}"
WORK_DIR="${WORK_DIR:-$ROOT/build/pyinstaller}"
cd "$ROOT"

"$PYTHON" -m PyInstaller --version >/dev/null 2>&1 || {
  echo "build.sh: PyInstaller is not installed for $PYTHON (pip install pyinstaller)" >&2; exit 2; }
if [ ! -f packaging/pico-teleop.png ]; then
  QT_QPA_PLATFORM=offscreen "$PYTHON" packaging/make_icon.py
fi

start=$(date +%s)
"$PYTHON" -m PyInstaller --noconfirm --log-level WARN --distpath "$DIST_DIR" --workpath "$WORK_DIR" \
  packaging/pico-teleop.spec
cp packaging/pico-teleop.desktop packaging/pico-teleop.png "$DIST_DIR/pico-teleop/"
end=$(date +%s)
size=$(du -sh "$DIST_DIR/pico-teleop" | cut -f1)
echo "build.sh: built $DIST_DIR/pico-teleop ($size) in $((end - start)) s"

if [ "${SKIP_SELF_CHECK:-0}" != 1 ]; then
  MUJOCO_GL="${MUJOCO_GL:-egl}" QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}" \
    "$DIST_DIR/pico-teleop/pico-teleop" --self-check
fi
