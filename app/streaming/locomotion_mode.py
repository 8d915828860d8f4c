"""The GR00T planner's locomotion modes: the one list of them.

`stream.locomotion` in the configuration is 'auto' or one of these names in lower case
(`app.streaming.config.Gait` and `LOCOMOTION_CHOICES` are built from this enum: a new moving gait is
a new member here; a static one is also listed in `protocol.STATIC_LOCOMOTION_MODES`); the protocol's planner messages carry the value
(`app.streaming.protocol` re-exports the enum; `app.streaming.locomotion` maps the sticks to them).
No imports: the configuration loads it.
"""

from __future__ import annotations

from enum import IntEnum


class LocomotionMode(IntEnum):
    """Planner `mode` values (C++ `localmotion_kplanner.hpp`; "IDEL" is the code's spelling)."""

    IDLE = 0
    SLOW_WALK = 1
    WALK = 2
    RUN = 3
    IDEL_SQUAT = 4
    IDEL_KNEEL_TWO_LEGS = 5
    IDEL_KNEEL = 6
    IDEL_LYING_FACE_DOWN = 7
    CRAWLING = 8
    IDEL_BOXING = 9
    WALK_BOXING = 10
    LEFT_PUNCH = 11
    RIGHT_PUNCH = 12
    RANDOM_PUNCH = 13
    ELBOW_CRAWLING = 14
    LEFT_HOOK = 15
    RIGHT_HOOK = 16
    FORWARD_JUMP = 17
    STEALTH_WALK = 18
    INJURED_WALK = 19
    LEDGE_WALKING = 20
    OBJECT_CARRYING = 21
    STEALTH_WALK_2 = 22
    HAPPY_DANCE_WALK = 23
    ZOMBIE_WALK = 24
    GUN_WALK = 25
    SCARE_WALK = 26


__all__ = ["LocomotionMode"]
