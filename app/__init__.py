"""pico-teleop: VR teleoperation of two simulated Franka Panda arms from Pico controllers."""

__version__ = "0.1.0"
