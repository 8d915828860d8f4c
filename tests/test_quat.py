"""calibration.quat against closed forms, round trips and scipy (through the one bridge)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose

from calibration import quat

RNG_SEED = 20240601


def _random_quats(n: int, seed: int = RNG_SEED) -> np.ndarray:
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _same_rotation(a, b, atol=1e-12) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return bool(np.allclose(a, b, atol=atol) or np.allclose(a, -b, atol=atol))


def test_identity_constant_is_read_only_unit():
    assert quat.IDENTITY.tolist() == [1.0, 0.0, 0.0, 0.0]
    with pytest.raises(ValueError):
        quat.IDENTITY[0] = 2.0


def test_normalize_and_degenerate():
    assert_allclose(quat.normalize([2.0, 0.0, 0.0, 0.0]), [1.0, 0.0, 0.0, 0.0])
    assert quat.is_unit(quat.normalize([1.0, 2.0, 3.0, 4.0]), 1e-15)
    assert not quat.is_unit([1.0, 2.0, 3.0, 4.0])
    for bad in ([0.0, 0.0, 0.0, 0.0], [math.nan, 0.0, 0.0, 1.0], [math.inf, 0.0, 0.0, 0.0]):
        with pytest.raises(quat.DegenerateQuaternionError):
            quat.normalize(bad)
    # The named error is a ValueError, so generic handlers catch it.
    assert issubclass(quat.DegenerateQuaternionError, ValueError)


def test_canonical_has_non_negative_w():
    assert quat.canonical([-0.5, 0.5, -0.5, 0.5]).tolist() == [0.5, -0.5, 0.5, -0.5]
    assert quat.canonical([0.5, 0.5, -0.5, 0.5]).tolist() == [0.5, 0.5, -0.5, 0.5]


def test_multiply_closed_forms():
    i, j, k = [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]
    # Hamilton: ij = k, jk = i, ki = j, i^2 = -1.
    assert quat.multiply(i, j).tolist() == k
    assert quat.multiply(j, k).tolist() == i
    assert quat.multiply(k, i).tolist() == j
    assert quat.multiply(i, i).tolist() == [-1.0, 0.0, 0.0, 0.0]
    assert quat.multiply(j, i).tolist() == [0.0, 0.0, 0.0, -1.0]


def test_multiply_associative_and_matches_matrix_product():
    qs = _random_quats(300)
    for a, b, c in zip(qs[0::3], qs[1::3], qs[2::3]):
        assert_allclose(
            quat.multiply(quat.multiply(a, b), c), quat.multiply(a, quat.multiply(b, c)), atol=1e-15
        )
        # "apply b, then a" is the matrix product Ra @ Rb.
        assert_allclose(
            quat.to_matrix(quat.multiply(a, b)), quat.to_matrix(a) @ quat.to_matrix(b), atol=1e-14
        )


def test_conjugate_inverse():
    for q in _random_quats(50):
        assert_allclose(quat.multiply(q, quat.conjugate(q)), quat.IDENTITY, atol=1e-15)
        assert_allclose(quat.inverse(q), quat.conjugate(q), atol=1e-15)
    q = np.array([2.0, 0.0, 0.0, 0.0])
    assert_allclose(quat.multiply(q, quat.inverse(q)), quat.IDENTITY)
    with pytest.raises(quat.DegenerateQuaternionError):
        quat.inverse([0.0, 0.0, 0.0, 0.0])


def test_rotate_matches_matrix_and_closed_form():
    rng = np.random.default_rng(RNG_SEED)
    for q in _random_quats(100):
        v = rng.normal(size=3)
        assert_allclose(quat.rotate(q, v), quat.to_matrix(q) @ v, atol=1e-14)
    # 90 deg about +Z takes +X to +Y (active, right-hand rule).
    qz90 = quat.from_axis_angle([0, 0, 1], math.pi / 2)
    assert_allclose(quat.rotate(qz90, [1.0, 0.0, 0.0]), [0.0, 1.0, 0.0], atol=1e-15)
    assert_allclose(quat.to_matrix(qz90), [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-15)


def test_matrix_round_trip_all_shepperd_branches():
    qs = list(_random_quats(500))
    # Rotations by pi about each axis exercise the x, y, z branches with w = 0.
    qs += [np.array(v, dtype=float) for v in ([0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [1, 0, 0, 0])]
    for q in qs:
        back = quat.from_matrix(quat.to_matrix(q))
        assert back[0] >= 0.0
        assert _same_rotation(back, q, atol=1e-14)
        assert_allclose(quat.to_matrix(back), quat.to_matrix(q), atol=1e-14)


def test_from_matrix_accepts_nested_lists_and_near_orthonormal():
    q = quat.from_matrix([[1, 0, 0], [0, 0, -1], [0, 1, 0]])  # +90 deg about X
    assert_allclose(q, [math.cos(math.pi / 4), math.sin(math.pi / 4), 0, 0], atol=1e-15)
    R = quat.to_matrix(_random_quats(1)[0]).astype(np.float32).astype(float)
    assert quat.is_unit(quat.from_matrix(R), 1e-15)
    with pytest.raises(ValueError):
        quat.from_matrix(np.eye(4))


def test_axis_angle():
    q = quat.from_axis_angle([0.0, 0.0, 5.0], math.pi / 2)  # axis need not be unit
    assert_allclose(q, [math.cos(math.pi / 4), 0, 0, math.sin(math.pi / 4)], atol=1e-15)
    with pytest.raises(quat.DegenerateQuaternionError):
        quat.from_axis_angle([0.0, 0.0, 0.0], 1.0)


@pytest.mark.parametrize(
    "angle", [0.0, 1e-300, 1e-12, 1e-9, 1e-7, 1e-3, 1.0, 3.0, math.pi - 1e-9, math.pi - 1e-12]
)
def test_rotvec_round_trip_near_zero_and_pi(angle):
    rng = np.random.default_rng(RNG_SEED)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    v = angle * axis
    q = quat.from_rotvec(v)
    assert quat.is_unit(q, 1e-15)
    back = quat.to_rotvec(q)
    # Relative precision is kept even for tiny angles (an acos-based log would lose it).
    assert_allclose(back, v, rtol=1e-12, atol=1e-300)
    # And q and -q give the same rotation vector.
    assert_allclose(quat.to_rotvec(-q), v, rtol=1e-9, atol=1e-300)


def test_to_rotvec_is_shortest():
    # 270 deg about +Z is -90 deg about +Z.
    q = quat.from_axis_angle([0, 0, 1], 1.5 * math.pi)
    assert q[0] < 0.0
    assert_allclose(quat.to_rotvec(q), [0, 0, -math.pi / 2], atol=1e-15)


def test_rotvec_round_trip_random():
    for q in _random_quats(200):
        v = quat.to_rotvec(q)
        assert np.linalg.norm(v) <= math.pi + 1e-15
        assert _same_rotation(quat.from_rotvec(v), q, atol=1e-14)


def test_scipy_bridge_known_value():
    from scipy.spatial.transform import Rotation

    c = math.cos(math.pi / 4)
    expected = np.array([c, 0.0, 0.0, c])  # 90 deg about z, w x y z
    assert_allclose(quat.from_axis_angle([0, 0, 1], math.pi / 2), expected, atol=1e-15)
    rot = Rotation.from_rotvec([0.0, 0.0, math.pi / 2])
    assert_allclose(quat.from_scipy(rot), expected, atol=1e-15)
    # scipy's default order is x y z w: the bridge must not hand that through.
    assert_allclose(rot.as_quat(), [0.0, 0.0, c, c], atol=1e-15)
    assert_allclose(quat.to_scipy(expected).as_rotvec(), [0.0, 0.0, math.pi / 2], atol=1e-15)
    assert_allclose(quat.to_scipy(expected).as_matrix(), quat.to_matrix(expected), atol=1e-15)


def test_scipy_bridge_round_trip_and_agreement():
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(RNG_SEED)
    for q in _random_quats(100):
        rot = quat.to_scipy(q)
        assert_allclose(quat.from_scipy(rot), q, atol=1e-15)
        assert_allclose(rot.as_matrix(), quat.to_matrix(q), atol=1e-14)
        v = rng.normal(size=3)
        assert_allclose(rot.apply(v), quat.rotate(q, v), atol=1e-14)
        assert _same_rotation(quat.from_rotvec(rot.as_rotvec()), q, atol=1e-12)
    a, b = _random_quats(2, seed=7)
    assert_allclose(
        quat.from_scipy(quat.to_scipy(a) * quat.to_scipy(b)), quat.multiply(a, b), atol=1e-14
    )
    with pytest.raises(ValueError):
        quat.from_scipy(Rotation.from_quat(_random_quats(2)))


def test_angle_between_sign_insensitive():
    a = quat.from_axis_angle([0, 0, 1], 0.3)
    b = quat.from_axis_angle([0, 0, 1], 1.0)
    assert math.isclose(quat.angle_between(a, b), 0.7, abs_tol=1e-15)
    assert math.isclose(quat.angle_between(-a, b), 0.7, abs_tol=1e-15)
    assert math.isclose(quat.angle_between(a, -b), 0.7, abs_tol=1e-15)
    assert quat.angle_between(a, -a) == 0.0
    assert math.isclose(quat.angle_between(quat.IDENTITY, [0, 1, 0, 0]), math.pi, abs_tol=1e-15)
    # Small angles keep full relative precision.
    assert math.isclose(
        quat.angle_between(quat.IDENTITY, quat.from_axis_angle([1, 1, 0], 1e-10)), 1e-10, rel_tol=1e-9
    )


def test_shared_kernels_match_the_public_functions():
    # filters and mapping call these directly in the hot path.
    for a, b in zip(_random_quats(50), _random_quats(50, seed=3)):
        ta, tb = tuple(a.tolist()), tuple(b.tolist())
        assert_allclose(quat._mul_conj(ta, tb), quat.multiply(a, quat.conjugate(b)), atol=1e-15)
        assert_allclose(quat._conj_mul(ta, tb), quat.multiply(quat.conjugate(a), b), atol=1e-15)
        # The pairing of terms makes q * conj(q) exactly (|q|^2, 0, 0, 0).
        assert quat._mul_conj(ta, ta)[1:] == (0.0, 0.0, 0.0)
        assert quat._conj_mul(ta, ta)[1:] == (0.0, 0.0, 0.0)


def test_conj_multiply_is_the_relative_rotation_and_exact_for_equal_inputs():
    Q = quat
    rng = np.random.default_rng(7)
    for _ in range(50):
        a, b = (Q.normalize(rng.normal(size=4)) for _ in range(2))
        np.testing.assert_allclose(Q.conj_multiply(a, b), Q.multiply(Q.conjugate(a), b), atol=1e-15)
        np.testing.assert_allclose(Q.multiply(a, Q.conj_multiply(a, b)), b, atol=1e-12)
        r = Q.conj_multiply(a, a)
        assert np.all(r[1:] == 0.0)  # exactly: a calibration pose maps to the reference with no residue
