"""The E-STOP key, application-wide: Space e-stops whatever window, dialog or field has the focus.

An event filter installed on the `QApplication` sees every key event before the widget it is
meant for (the help's table, the settings' fields, a file dialog, a message box's buttons), so no
widget can consume Space: not by typing a space, not by "clicking" a focused button, not by
selecting a table row. Text fields included: no field of this program needs a space (numbers,
endpoints, file names in the non-native file dialogs; a file name with a space is picked from the
list or typed in the file manager's way elsewhere), and an e-stop that works everywhere but in a
text field is one the operator cannot trust.

Space arrives twice per press: first as a `ShortcutOverride` (where Qt asks the focused widget
whether it wants the key before the shortcut map takes it), then as the `KeyPress`. The filter
accepts the override (so the shortcut map does not fire the E-STOP action a second time) and
swallows it (so the widget never learns of the key), then e-stops on the press. A held key's
auto-repeats are swallowed without e-stopping again; the release is left alone.

One field needs spaces: the Episodes panel's task text (`types_space`). There Space still
e-stops first, as everywhere, and then types a space into the field (the operator resets after
typing the task; an e-stop that waits for the focus to leave a field would not be one).
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QLineEdit

ESTOP_KEY = Qt.Key.Key_Space


class EstopKeyFilter(QObject):
    """Calls `estop` on every Space press anywhere in the application, before any widget sees it."""

    def __init__(self, estop: Callable[[], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._estop = estop
        self.presses = 0
        """Space presses that e-stopped (auto-repeats not counted)."""
        self._typing: list[QLineEdit] = []

    def types_space(self, field: QLineEdit) -> None:
        """Space in `field` e-stops, then types a space there (a text that needs spaces: the task)."""
        self._typing.append(field)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802
        kind = event.type()
        if kind not in (QEvent.Type.ShortcutOverride, QEvent.Type.KeyPress):
            return False
        if event.key() != ESTOP_KEY:
            return False
        event.accept()
        if kind == QEvent.Type.KeyPress and not event.isAutoRepeat():
            self.presses += 1
            try:
                self._estop()
            finally:
                if any(obj is f for f in self._typing) and obj.isEnabled() and not obj.isReadOnly():
                    obj.insert(" ")
        return True


__all__ = ["ESTOP_KEY", "EstopKeyFilter"]
