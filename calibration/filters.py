"""One-Euro filters (Casiez, Roussel, Vogel, CHI 2012) for positions and orientations.

A first-order low-pass whose cutoff rises with speed: ``cutoff = min_cutoff_hz + beta * speed``.
At rest the low cutoff removes jitter; in motion the higher cutoff removes lag. The speed is
estimated as in the paper's algorithm (and the authors' reference code since 2023): the rate of
change from the previous *filtered* value, itself low-passed at ``d_cutoff_hz``.

Both filters take the sample time, so an irregular rate is handled; a sample whose time does
not advance (``dt <= 0``, e.g. the same tracker frame read twice) returns the previous output
and leaves the state untouched.

The state is kept in Python floats: for 3 or 4 components that is several times faster than
numpy, whose per-operation overhead is about a microsecond on arrays this small.
"""

from __future__ import annotations

import math

import numpy as np

from calibration.quat import _conj_mul, _from_rotvec, _mul, _normalize, _seq, _to_rotvec

_TWO_PI = 2.0 * math.pi


def _check_params(min_cutoff_hz: float, beta: float, d_cutoff_hz: float) -> tuple[float, float, float]:
    values = (float(min_cutoff_hz), float(beta), float(d_cutoff_hz))
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"One-Euro parameters must be finite, got {values}")
    if values[0] <= 0.0 or values[2] <= 0.0:
        raise ValueError(
            f"min_cutoff_hz and d_cutoff_hz must be > 0 Hz, got {values[0]} and {values[2]}"
        )
    if values[1] < 0.0:
        raise ValueError(f"beta must be >= 0, got {values[1]}")
    return values


def _alpha(cutoff_hz: float, dt_s: float) -> float:
    """Smoothing factor of a first-order low-pass with time constant 1 / (2 pi cutoff)."""
    r = _TWO_PI * cutoff_hz * dt_s
    return r / (r + 1.0)


class OneEuroFilter:
    """One-Euro filter for a vector of any fixed length (positions in m, or any unit u).

    ``min_cutoff_hz``: cutoff at rest (Hz); lower removes more jitter and adds more lag.
    ``beta``: cutoff increase per unit of speed (Hz per u/s, so 1/m for positions); higher
    follows fast motion more closely. ``d_cutoff_hz``: cutoff of the speed estimate (Hz).
    The speed is the Euclidean norm of the estimated velocity, so every component shares one
    cutoff and a diagonal motion is not distorted.
    """

    __slots__ = ("min_cutoff_hz", "beta", "d_cutoff_hz", "_x_hat", "_dx_hat", "_t_s")

    def __init__(self, min_cutoff_hz: float, beta: float, d_cutoff_hz: float) -> None:
        self.min_cutoff_hz, self.beta, self.d_cutoff_hz = _check_params(
            min_cutoff_hz, beta, d_cutoff_hz
        )
        self._x_hat: list[float] | None = None
        self._dx_hat: list[float] = []
        self._t_s = 0.0

    def reset(self) -> None:
        """Forget the state: the next sample is returned as it is."""
        self._x_hat = None

    def state(self) -> dict:
        """What the next `filter` depends on from earlier samples (plain floats and lists), for `restore`."""
        return {"x_hat": None if self._x_hat is None else list(self._x_hat), "dx_hat": list(self._dx_hat),
                "t_s": self._t_s}

    def restore(self, state: dict) -> None:
        """Continue from a `state()`: the next `filter` returns what it returned after that state, bit for bit."""
        x_hat = state["x_hat"]
        self._x_hat = None if x_hat is None else [float(v) for v in x_hat]
        self._dx_hat = [float(v) for v in state["dx_hat"]]
        self._t_s = float(state["t_s"])

    def filter(self, x, t_s: float) -> np.ndarray:
        """The filtered value (a new array) of sample ``x`` taken at time ``t_s`` (s).

        Raises ValueError, with the state untouched, for a non-finite sample or one whose
        length differs from the first sample's.
        """
        xs = _seq(x)
        # One sum catches any NaN or infinity (inf - inf is NaN too).
        if not math.isfinite(sum(xs)):
            raise ValueError(f"One-Euro filter input must be finite, got {list(xs)}")
        x_hat = self._x_hat
        if x_hat is None:
            self._x_hat = [float(v) for v in xs]
            self._dx_hat = [0.0] * len(xs)
            self._t_s = t_s
            return np.array(self._x_hat)
        if len(xs) != len(x_hat):
            raise ValueError(
                f"One-Euro filter input has {len(xs)} components, the state has {len(x_hat)}"
            )
        dt_s = t_s - self._t_s
        if not (dt_s > 0.0):
            return np.array(x_hat)
        self._t_s = t_s

        a_d = _alpha(self.d_cutoff_hz, dt_s)
        rate_hz = 1.0 / dt_s
        if len(x_hat) == 3:
            # Positions, the per-tick case: written out, twice as fast as the comprehensions.
            x0, x1, x2 = xs
            h0, h1, h2 = x_hat
            d0, d1, d2 = self._dx_hat
            e0, e1, e2 = x0 - h0, x1 - h1, x2 - h2
            d0 += a_d * (e0 * rate_hz - d0)
            d1 += a_d * (e1 * rate_hz - d1)
            d2 += a_d * (e2 * rate_hz - d2)
            a = _alpha(self.min_cutoff_hz + self.beta * math.sqrt(d0 * d0 + d1 * d1 + d2 * d2), dt_s)
            x_hat = [h0 + a * e0, h1 + a * e1, h2 + a * e2]
            dx_hat = [d0, d1, d2]
        else:
            diff = [v - h for v, h in zip(xs, x_hat)]
            dx_hat = [d + a_d * (e * rate_hz - d) for e, d in zip(diff, self._dx_hat)]
            a = _alpha(self.min_cutoff_hz + self.beta * math.sqrt(sum(d * d for d in dx_hat)), dt_s)
            x_hat = [h + a * e for h, e in zip(x_hat, diff)]

        self._x_hat = x_hat
        self._dx_hat = dx_hat
        return np.array(x_hat)


class OneEuroQuatFilter:
    """One-Euro filter for a unit quaternion ``w, x, y, z``.

    The speed is the norm of the angular velocity (rad/s) from the previous filtered
    orientation to the sample, ``to_rotvec(conj(q_hat) * q) / dt``, low-passed at
    ``d_cutoff_hz``; the step is the slerp from ``q_hat`` towards the sample by the smoothing
    factor, along the shorter arc, so an input that flips between ``q`` and ``-q`` causes no jump.
    The output stays on the hemisphere of the previous output, whatever the input's sign.

    ``min_cutoff_hz``: cutoff at rest (Hz). ``beta``: cutoff increase per rad/s (Hz s / rad).
    ``d_cutoff_hz``: cutoff of the angular-speed estimate (Hz).
    """

    __slots__ = ("min_cutoff_hz", "beta", "d_cutoff_hz", "_q_hat", "_w_hat", "_t_s")

    def __init__(self, min_cutoff_hz: float, beta: float, d_cutoff_hz: float) -> None:
        self.min_cutoff_hz, self.beta, self.d_cutoff_hz = _check_params(
            min_cutoff_hz, beta, d_cutoff_hz
        )
        self._q_hat: tuple[float, float, float, float] | None = None
        self._w_hat = (0.0, 0.0, 0.0)
        self._t_s = 0.0

    def reset(self) -> None:
        """Forget the state: the next sample is returned as it is (normalized)."""
        self._q_hat = None

    def state(self) -> dict:
        """What the next `filter` depends on from earlier samples (plain floats and lists), for `restore`."""
        return {"q_hat": None if self._q_hat is None else list(self._q_hat), "w_hat": list(self._w_hat),
                "t_s": self._t_s}

    def restore(self, state: dict) -> None:
        """Continue from a `state()`: the next `filter` returns what it returned after that state, bit for bit."""
        q_hat = state["q_hat"]
        if q_hat is not None and len(q_hat) != 4:
            raise ValueError(f"q_hat: expected 4 values (w, x, y, z), got {len(q_hat)}")
        w_hat = tuple(float(v) for v in state["w_hat"])
        if len(w_hat) != 3:
            raise ValueError(f"w_hat: expected 3 values, got {len(w_hat)}")
        self._q_hat = None if q_hat is None else tuple(float(v) for v in q_hat)
        self._w_hat = w_hat
        self._t_s = float(state["t_s"])

    def filter(self, q_wxyz, t_s: float) -> np.ndarray:
        """The filtered unit quaternion (a new array) of sample ``q_wxyz`` taken at ``t_s`` (s).

        Raises `calibration.quat.DegenerateQuaternionError` (a ValueError), with the state
        untouched, for a zero or non-finite sample.
        """
        q = _normalize(_seq(q_wxyz))
        q_hat = self._q_hat
        if q_hat is None:
            self._q_hat = q
            self._w_hat = (0.0, 0.0, 0.0)
            self._t_s = t_s
            return np.array(q)
        dt_s = t_s - self._t_s
        if not (dt_s > 0.0):
            return np.array(q_hat)
        self._t_s = t_s

        # Shortest rotation from the filtered orientation to the sample, in q_hat's body axes;
        # _to_rotvec picks the w >= 0 representative, which absorbs a sign flip of the input.
        ex, ey, ez = _to_rotvec(_conj_mul(q_hat, q))
        a_d = _alpha(self.d_cutoff_hz, dt_s)
        wx, wy, wz = self._w_hat
        wx += a_d * (ex / dt_s - wx)
        wy += a_d * (ey / dt_s - wy)
        wz += a_d * (ez / dt_s - wz)
        speed = math.sqrt(wx * wx + wy * wy + wz * wz)
        a = _alpha(self.min_cutoff_hz + self.beta * speed, dt_s)
        # slerp(q_hat, q, a) = q_hat * exp(a * log(conj(q_hat) * q)), reusing the log above.
        q_hat = _normalize(_mul(q_hat, _from_rotvec((a * ex, a * ey, a * ez))))

        self._q_hat = q_hat
        self._w_hat = (wx, wy, wz)
        return np.array(q_hat)
