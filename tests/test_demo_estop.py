"""What a tracking source is shown of the teleop state: the loop tells it after every tick."""

from app.control.loop import ControlLoop
from app.events import Command, CommandKind
from app.tracking.source import SourceBase
from tests.engine_helpers import make_engine, sample


class _Watching(SourceBase):
    """Records what the loop shows it of the teleop state."""

    name = "watching"

    def __init__(self) -> None:
        super().__init__()
        self.shown: list[bool] = []

    def read(self, loop_time_s: float):
        return sample()

    def show_estopped(self, estopped: bool) -> None:
        self.shown.append(estopped)


def test_the_loop_shows_the_source_the_teleop_state_after_every_tick():
    eng = make_engine()
    src = _Watching()
    src.start()
    loop = ControlLoop(eng, src, eng.cfg.loop, paced=False, max_ticks=6)
    sends = {1: CommandKind.ESTOP, 3: CommandKind.RESET}  # after these ticks: applied by the next one
    loop.subscribe(lambda snap: loop.send(Command(sends[snap.tick])) if snap.tick in sends else None)
    loop.run()
    assert src.shown == [False, False, True, True, False, False]
