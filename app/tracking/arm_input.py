"""Which input drives an arm this tick, its controller or its tracked hand, as one controller reading.

A hand drives its arm through the same `DevicePose` and `ControllerButtons` a controller gives
(`app.tracking.hand_gestures`: the wrist turned into the grip-pose convention, the pinch as the
trigger, the curled middle, ring and little fingers as the grip), so the gate, the filters, the
calibration and the clutch downstream are the controller's, unchanged.

`ArmInputSelector.select(sample)` returns `(pose, buttons, by_hand, switched)`. `switched` is True
on the tick the input changes; the engine then treats it as a clutch release and re-engage: it
forgets the arm's pose input (the next accepted pose counts as reacquired), so an engaged arm holds
where it is and re-latches at the new input's pose. The target never steps.

`set_mode(mode)` is the operator's switch mid-session (`CommandKind.ARM_INPUT`): it takes effect on
the next `select`, which reports `switched` when it changes the driving input, so it is the same
release and re-latch. A mode that leaves the controller mode starts the hand's gestures from rest:
the controller mode judged none, and a gesture left from before must not engage the arm.

While the controller drives, the returned pose and buttons are the sample's own objects (nothing
allocated); outside the controller mode the hand's gestures are updated on every tick its joints
are present, so a switch finds them current.
"""

from __future__ import annotations

from app.tracking.config import HandsConfig, InputMode
from app.tracking.hand_gestures import HandGestures, grip_pose_from_wrist
from app.tracking.hand_joints import HandDataSource, HandJoints
from app.tracking.sample import ControllerButtons, DevicePose, TrackingResult, TrackingSample

_NO_HAND_POSE = DevicePose()
"""A hand not tracked: an invalid pose (the gate counts it as tracking loss)."""


def hand_controller_pose(hand: HandJoints | None, side: str, t_s: float) -> DevicePose:
    """`hand` (of `side`) as its controller's pose: the wrist turned into the grip-pose convention,
    read at `t_s`; an invalid pose when the hand or its wrist is not tracked."""
    grip = None if hand is None else grip_pose_from_wrist(hand, side)
    if grip is None:
        return _NO_HAND_POSE
    pos, q = grip
    return DevicePose(pos_vr_m=pos, quat_vr_wxyz=q, valid=True, connected=True,
                      tracking_result=int(TrackingResult.RUNNING_OK), device_time_s=t_s, read_time_s=t_s)


class ArmInputSelector:
    """The input of one arm (`side`: 'left' or 'right'). Not thread-safe: the engine's arm owns it."""

    def __init__(self, side: str, mode: InputMode, cfg: HandsConfig) -> None:
        self.side = side
        self.mode = InputMode(mode)
        self.gestures = HandGestures(cfg)
        self.by_hand = self.mode is InputMode.HAND
        self._hand_buttons = ControllerButtons()

    def set_mode(self, mode: InputMode) -> bool:
        """The operator's switch to `mode` (see the module); whether the mode changed."""
        mode = InputMode(mode)
        if mode is self.mode:
            return False
        if self.mode is InputMode.CONTROLLER:
            self.gestures.reset()
            self._hand_buttons = ControllerButtons()
        self.mode = mode
        return True

    def _hand_can_drive(self, hand: HandJoints | None) -> bool:
        return (hand is not None and hand.source is not HandDataSource.CONTROLLER
                and grip_pose_from_wrist(hand, self.side) is not None)

    def select(self, sample: TrackingSample) -> tuple[DevicePose, ControllerButtons, bool, bool]:
        """(pose, buttons, by_hand, switched) for `sample`: see the module."""
        hand = sample.hand(self.side)
        if hand is not None and self.mode is not InputMode.CONTROLLER:
            trigger, grip = self.gestures.update(hand)
            if trigger != self._hand_buttons.trigger or grip != self._hand_buttons.grip:
                self._hand_buttons = ControllerButtons(trigger=trigger, grip=grip)
        mode = self.mode
        if mode is InputMode.CONTROLLER:
            by_hand = False
        elif mode is InputMode.HAND:
            by_hand = True
        else:
            by_hand = not sample.pose(self.side).valid and self._hand_can_drive(hand)
        switched = by_hand != self.by_hand
        self.by_hand = by_hand
        if not by_hand:
            return sample.pose(self.side), sample.buttons(self.side), False, switched
        return hand_controller_pose(hand, self.side, sample.sample_time_s), self._hand_buttons, True, switched


    def state(self) -> dict:
        """What the next `select` depends on from earlier samples, plain data."""
        return {"mode": str(self.mode), "by_hand": bool(self.by_hand), "gestures": self.gestures.state()}

    def restore(self, state: dict) -> None:
        """Back to `state`; one without a mode (recorded before the operator could switch) keeps the
        configured mode. ValueError for a mode that is not an `InputMode`."""
        if "mode" in state:
            self.mode = InputMode(state["mode"])
        self.by_hand = bool(state["by_hand"])
        self.gestures.restore(state["gestures"])
        g = self.gestures
        self._hand_buttons = ControllerButtons(trigger=1.0 if g.pinched else 0.0, grip=g.gripping)
