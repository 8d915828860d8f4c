"""The dual-Panda scene: names, Franka's published kinematics, the home pose, physics, a grasp.

Every test of the `model` fixture runs twice: with our primitive shapes and with Franka's meshes
(when dm-robotics-panda is installed), which must change nothing of this."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from app.sim.config import SceneConfig
from app.paths import ASSETS_ENV_VAR, assets_dir, resolve_asset
from app.sim.franka_meshes import find_mesh_source
from app.sim.scene import ArmHandles, SceneError, home_qpos, load_model, load_scene_model, resolve_arm

SCENE = "scenes/dual_panda.xml"
ARMS = {"left": "left/", "right": "right/"}
BASE_POS_WORLD_M = {"left": np.array([0.0, 0.3, 0.0]), "right": np.array([0.0, -0.3, 0.0])}
READY_Q_RAD = np.array([0.0, -0.785398, 0.0, -2.356194, 0.0, 1.570796, 0.785398])

# Franka Emika's published kinematics (FCI "Robot and interface specifications"), modified DH
# (Craig): T_{i-1,i} = RotX(alpha) TransX(a) RotZ(theta) TransZ(d); rows a, d, alpha; the last row
# is the fixed flange. F_T_EE of the Franka Hand: RotZ(-pi/4), then 0.1034 m along z.
DH_A_D_ALPHA = np.array([
    [0.0, 0.333, 0.0],
    [0.0, 0.0, -np.pi / 2],
    [0.0, 0.316, np.pi / 2],
    [0.0825, 0.0, np.pi / 2],
    [-0.0825, 0.384, -np.pi / 2],
    [0.0, 0.0, np.pi / 2],
    [0.088, 0.0, np.pi / 2],
    [0.0, 0.107, 0.0],
])
FLANGE_TO_TCP_M = 0.1034


def _rot_x(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1.0]])


def _rot_z(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])


def _trans(x: float, y: float, z: float) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


def dh_T_base_flange(q: np.ndarray) -> np.ndarray:
    T = np.eye(4)
    for (a, d, alpha), theta in zip(DH_A_D_ALPHA, np.append(q, 0.0)):
        T = T @ _rot_x(alpha) @ _trans(a, 0, 0) @ _rot_z(theta) @ _trans(0, 0, d)
    return T


def dh_T_world_tcp(arm: str, q: np.ndarray) -> np.ndarray:
    T_world_flange = _trans(*BASE_POS_WORLD_M[arm]) @ dh_T_base_flange(q)
    return T_world_flange @ _rot_z(-np.pi / 4) @ _trans(0, 0, FLANGE_TO_TCP_M)


def rot_angle_rad(R_a: np.ndarray, R_b: np.ndarray) -> float:
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, (R_a.T @ R_b).ravel())
    return 2.0 * np.arctan2(np.linalg.norm(quat[1:]), abs(quat[0]))


@pytest.fixture(scope="module", params=["primitives", "meshes"])
def model(request) -> mujoco.MjModel:
    if request.param == "meshes" and find_mesh_source() is None:
        pytest.skip("dm-robotics-panda is not installed (pip install --no-deps dm-robotics-panda==0.4.8)")
    model, geometry = load_scene_model(resolve_asset(SCENE), SceneConfig(geometry=request.param), ARMS.values())
    assert geometry.kind == request.param
    return model


@pytest.fixture(scope="module")
def arms(model) -> dict[str, ArmHandles]:
    return {name: resolve_arm(model, name, prefix) for name, prefix in ARMS.items()}


@pytest.fixture
def data_home(model) -> mujoco.MjData:
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    mujoco.mj_forward(model, data)
    return data


# --- loading and names -------------------------------------------------------------------------

def test_scene_loads_standalone_with_expected_sizes(model):
    assert mujoco.MjModel.from_xml_path(str(assets_dir() / SCENE)).nq == model.nq
    # 2 arms x (7 + 2 fingers), 4 free objects (7 qpos, 6 dof each); 2 x 8 actuators.
    assert (model.nq, model.nv, model.nu) == (2 * 9 + 4 * 7, 2 * 9 + 4 * 6, 16)
    assert model.opt.timestep * 3 == pytest.approx(0.005)  # three physics steps per 200 Hz tick
    assert model.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST


def test_required_names_exist(model):
    for prefix in ARMS.values():
        for i in range(1, 8):
            model.joint(f"{prefix}joint{i}")
        for i in range(1, 9):
            model.actuator(f"{prefix}actuator{i}")
        for name in ("finger_joint1", "finger_joint2"):
            model.joint(prefix + name)
        model.site(prefix + "tcp")
        model.site(prefix + "flange")
    for name in ("cube_left", "cube_right"):
        assert model.body(name).jntnum[0] == 1
        assert model.jnt_type[model.body(name).jntadr[0]] == mujoco.mjtJoint.mjJNT_FREE
    for name in ("place_left", "place_right"):
        model.site(name)


def test_resolve_arm_handles_match_model(model, arms):
    left = arms["left"]
    assert left.name == "left" and left.prefix == "left/"
    assert [model.joint(int(j)).name for j in left.joint_ids] == [f"left/joint{i}" for i in range(1, 8)]
    assert [model.actuator(int(a)).name for a in left.actuator_ids] == [f"left/actuator{i}" for i in range(1, 8)]
    assert model.actuator(left.gripper_actuator_id).name == "left/actuator8"
    assert model.site(left.tcp_site_id).name == "left/tcp"
    assert model.site(left.flange_site_id).name == "left/flange"
    np.testing.assert_array_equal(left.joint_range_rad[3], [-3.0718, -0.0698])
    np.testing.assert_array_equal(left.gripper_ctrl_range, [0.0, 255.0])
    assert left.joint_range_rad.shape == left.ctrl_range.shape == (7, 2)
    assert set(left.qpos_adr).isdisjoint(arms["right"].qpos_adr)
    assert model.joint("left/finger_joint2").qposadr[0] == left.finger_qpos_adr[1]


def test_arm_handles_are_immutable(arms):
    left = arms["left"]
    for arr in (left.qpos_adr, left.dof_adr, left.joint_range_rad, left.ctrl_range, left.finger_qpos_adr):
        with pytest.raises(ValueError):
            arr[0] = 0
    with pytest.raises(AttributeError):
        left.tcp_site_id = 0  # type: ignore[misc]


def test_resolve_arm_error_names_every_missing_element_and_suggests(model):
    with pytest.raises(SceneError) as err:
        resolve_arm(model, "left", "lefft/")
    msg = str(err.value)
    for missing in ["lefft/joint1", "lefft/joint7", "lefft/finger_joint2", "lefft/actuator8", "lefft/tcp", "lefft/flange"]:
        assert f"'{missing}'" in msg
    assert "left/joint1" in msg  # a similar name that exists


def test_resolve_arm_reports_a_single_missing_site(tmp_path):
    spec = mujoco.MjSpec.from_file(str(resolve_asset(SCENE)))
    spec.delete(spec.site("right/tcp"))
    model = spec.compile()
    resolve_arm(model, "left", "left/")
    with pytest.raises(SceneError, match=r"site 'right/tcp' is missing \(similar: .*left/tcp"):
        resolve_arm(model, "right", "right/")


def test_resolve_arm_rejects_a_miswired_actuator():
    spec = mujoco.MjSpec.from_file(str(resolve_asset(SCENE)))
    spec.actuator("left/actuator2").target = "left/joint3"
    with pytest.raises(SceneError, match="actuator 'left/actuator2' must drive joint 'left/joint2'"):
        resolve_arm(spec.compile(), "left", "left/")


def test_load_model_errors_name_the_path(tmp_path):
    with pytest.raises(SceneError, match="not found") as err:
        load_model(tmp_path / "nope.xml")
    assert "nope.xml" in str(err.value)
    bad = tmp_path / "bad.xml"
    bad.write_text("<mujoco><worldbody><geom type='sphere'/></worldbody>")
    with pytest.raises(SceneError) as err:
        load_model(bad)
    assert str(bad) in str(err.value) and "XML" in str(err.value)


def test_home_qpos_and_missing_keyframe(model, tmp_path):
    q = home_qpos(model)
    q[0] = 99.0  # a copy: the model's keyframe is untouched
    assert model.key("home").qpos[0] == 0.0
    bare = tmp_path / "bare.xml"
    bare.write_text("<mujoco><worldbody><geom size='0.1'/></worldbody></mujoco>")
    with pytest.raises(SceneError, match="keyframe 'home' not found"):
        home_qpos(load_model(bare))


def test_assets_dir_env_override(monkeypatch, tmp_path):
    monkeypatch.setenv(ASSETS_ENV_VAR, str(tmp_path))
    assert assets_dir() == tmp_path.resolve()
    assert resolve_asset("scenes/x.xml") == tmp_path.resolve() / "scenes" / "x.xml"
    assert resolve_asset(tmp_path / "abs.xml") == tmp_path / "abs.xml"


# --- kinematics against Franka's DH ------------------------------------------------------------

def test_flange_and_tcp_match_franka_dh(model, arms):
    rng = np.random.default_rng(7)
    data = mujoco.MjData(model)
    max_pos_err_m = max_rot_err_rad = 0.0
    for _ in range(200):
        qs = {}
        for name, arm in arms.items():
            lo, hi = arm.joint_range_rad.T
            qs[name] = rng.uniform(lo, hi)
            data.qpos[arm.qpos_adr] = qs[name]
            data.qpos[arm.finger_qpos_adr] = rng.uniform(0.0, 0.04, 2)
        mujoco.mj_kinematics(model, data)
        for name, arm in arms.items():
            T_flange = _trans(*BASE_POS_WORLD_M[name]) @ dh_T_base_flange(qs[name])
            T_tcp = dh_T_world_tcp(name, qs[name])
            for site, T in ((arm.flange_site_id, T_flange), (arm.tcp_site_id, T_tcp)):
                max_pos_err_m = max(max_pos_err_m, np.linalg.norm(data.site_xpos[site] - T[:3, 3]))
                max_rot_err_rad = max(max_rot_err_rad, rot_angle_rad(data.site_xmat[site].reshape(3, 3), T[:3, :3]))
            # The TCP is the flange moved 0.1034 m along its own z axis.
            R_flange = data.site_xmat[arm.flange_site_id].reshape(3, 3)
            np.testing.assert_allclose(
                data.site_xpos[arm.tcp_site_id],
                data.site_xpos[arm.flange_site_id] + FLANGE_TO_TCP_M * R_flange[:, 2], atol=1e-6)
    assert max_pos_err_m < 1e-6
    assert max_rot_err_rad < 1e-6


def test_home_tcp_points_down_at_franka_ready_position(model, arms, data_home):
    for name, arm in arms.items():
        np.testing.assert_allclose(data_home.qpos[arm.qpos_adr], READY_Q_RAD)
        R_tcp = data_home.site_xmat[arm.tcp_site_id].reshape(3, 3)
        assert R_tcp[:, 2] @ np.array([0.0, 0.0, -1.0]) > 1.0 - 1e-9
        # At the ready pose Franka's EE frame has x forward, so the fingers open along world y.
        np.testing.assert_allclose(R_tcp, np.diag([1.0, -1.0, -1.0]), atol=1e-6)
        np.testing.assert_allclose(data_home.site_xpos[arm.tcp_site_id], dh_T_world_tcp(name, READY_Q_RAD)[:3, 3], atol=1e-6)
        # O_T_EE of the ready pose is about (0.307, 0, 0.487) in the robot base frame.
        np.testing.assert_allclose(data_home.site_xpos[arm.tcp_site_id] - BASE_POS_WORLD_M[name], [0.3069, 0.0, 0.4869], atol=5e-4)
        np.testing.assert_allclose(data_home.qpos[arm.finger_qpos_adr], [0.04, 0.04])
        np.testing.assert_allclose(data_home.ctrl[arm.actuator_ids], READY_Q_RAD)
        assert data_home.ctrl[arm.gripper_actuator_id] == 255.0


# --- physics -----------------------------------------------------------------------------------

def test_home_is_static_under_gravity(model, arms, data_home):
    q_home = data_home.qpos.copy()
    ctrl_home = model.key("home").ctrl.copy()
    for _ in range(int(round(2.0 / model.opt.timestep))):
        data_home.ctrl[:] = ctrl_home
        mujoco.mj_step(model, data_home)
    for arm in arms.values():
        assert np.abs(data_home.qpos[arm.qpos_adr] - q_home[arm.qpos_adr]).max() < 1e-3
    for cube in ("cube_left", "cube_right"):
        adr = model.joint(cube).qposadr[0]
        np.testing.assert_allclose(data_home.qpos[adr:adr + 3], q_home[adr:adr + 3], atol=1e-3)


def _solve_tcp_ik(model, data, arm: ArmHandles, pos_world_m, R_world_tcp, iters: int = 100) -> np.ndarray:
    """Damped least squares on position and orientation; returns arm joints, `data` untouched."""
    work = mujoco.MjData(model)
    work.qpos[:] = data.qpos
    jac_pos, jac_rot = np.zeros((3, model.nv)), np.zeros((3, model.nv))
    quat, err_rot = np.zeros(4), np.zeros(3)
    lo, hi = arm.joint_range_rad.T
    for _ in range(iters):
        mujoco.mj_kinematics(model, work)
        mujoco.mj_comPos(model, work)
        err_pos = pos_world_m - work.site_xpos[arm.tcp_site_id]
        mujoco.mju_mat2Quat(quat, (R_world_tcp @ work.site_xmat[arm.tcp_site_id].reshape(3, 3).T).ravel())
        mujoco.mju_quat2Vel(err_rot, quat, 1.0)
        err = np.r_[err_pos, err_rot]
        if np.linalg.norm(err) < 1e-10:
            break
        mujoco.mj_jacSite(model, work, jac_pos, jac_rot, arm.tcp_site_id)
        J = np.r_[jac_pos, jac_rot][:, arm.dof_adr]
        work.qpos[arm.qpos_adr] = np.clip(work.qpos[arm.qpos_adr] + J.T @ np.linalg.solve(J @ J.T + 1e-6 * np.eye(6), err), lo, hi)
    assert np.linalg.norm(err) < 1e-6, f"IK did not converge: error {err}"
    return work.qpos[arm.qpos_adr].copy()


def test_grasp_and_lift_cube(model, arms, data_home):
    arm, data = arms["left"], data_home
    cube_start = data.body("cube_left").xpos.copy()
    R_down = np.diag([1.0, -1.0, -1.0])  # fingers open along world y, across two cube faces
    q_grasp = _solve_tcp_ik(model, data, arm, cube_start, R_down)
    q_lift = _solve_tcp_ik(model, data, arm, cube_start + [0.0, 0.0, 0.10], R_down)

    data.qpos[arm.qpos_adr] = q_grasp
    data.ctrl[arm.actuator_ids] = q_grasp
    mujoco.mj_forward(model, data)
    np.testing.assert_allclose(data.site_xpos[arm.tcp_site_id], cube_start, atol=1e-6)

    data.ctrl[arm.gripper_actuator_id] = arm.gripper_ctrl_range[0]
    for _ in range(int(0.5 / model.opt.timestep)):
        mujoco.mj_step(model, data)
    # Both fingers stop on the 5 cm cube (each 2.5 cm from the centre line).
    np.testing.assert_allclose(data.qpos[arm.finger_qpos_adr], [0.025, 0.025], atol=1e-3)

    lift_steps = int(1.0 / model.opt.timestep)
    for k in range(1, lift_steps + 1):
        s = k / lift_steps
        data.ctrl[arm.actuator_ids] = q_grasp + (q_lift - q_grasp) * (3 * s**2 - 2 * s**3)
        mujoco.mj_step(model, data)
    for _ in range(int(0.3 / model.opt.timestep)):
        mujoco.mj_step(model, data)

    cube_now = data.body("cube_left").xpos
    assert cube_now[2] - cube_start[2] > 0.05
    assert np.linalg.norm(cube_now - data.site_xpos[arm.tcp_site_id]) < 0.005
