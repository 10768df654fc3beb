"""Isaac Lab's LEAPP export path, without the simulator.

Reproduces what ``isaaclab/utils/leapp/export_annotator.py`` (ExportPatcher) and
``isaaclab_rl/entrypoints/backends/export_common.py`` do around a policy, so that each backend
script in this folder only writes its own loop, as the upstream ``export_<backend>.py`` does:

- every observation term reads the robot's data through an annotating proxy: each property read
  (``robot_joint_pos``, ``robot_root_quat_w``, ...) is one ``annotate.input_tensors`` edge carrying
  TensorSemantics (kind, element names, connection); ``projected_gravity`` is computed in torch from
  the annotated root quaternion; ``generated_commands`` is an input with its command kind;
  ``last_action`` is LEAPP state (``annotate.state_tensors``), updated with the raw actions;
- the action term (a relative joint position action: ``default + scale * raw``) writes the joint
  position target, exported as an output with its semantics, and the PD gains of the actuators are
  declared ``static_outputs`` (``<term>_kp_gains`` / ``<term>_kd_gains``);
- ``compile_graph`` gets ``GraphConfigs(frequency=1 / (sim.dt * decimation))``.

The environment is random: observations of the right shapes from a seeded generator, one env
(Isaac Lab exports with ``num_envs = 1``). Each step's observation depends on the previous action,
as a simulator's would.
"""
from __future__ import annotations

import argparse
import sys

import torch

JOINTS = [f"{leg}_{j}_joint" for leg in ("LF", "RF", "LH", "RH") for j in ("HAA", "HFE")]
TERM = "joint_pos"            # the action term's name: outputs joint_pos_kp_gains, ...
SIM_DT, DECIMATION = 0.005, 4


def parse_args(variants: tuple[str, ...]) -> argparse.Namespace:
    """The upstream export CLI's flags that matter here, plus ``--bug`` (the variant to run)."""
    p = argparse.ArgumentParser()
    p.add_argument("--bug", default="none", choices=("none",) + variants)
    p.add_argument("--export_method", default="onnx-dynamo")
    p.add_argument("--validation_steps", type=int, default=5)
    p.add_argument("--export_save_path", default=".")
    p.add_argument("--task", default="Isaac-Velocity-Flat-Anymal-Play-v0")
    return p.parse_args(sys.argv[1:])


class RandomEnv:
    """One env of a locomotion task: the robot's data as the annotator reads it, random."""

    def __init__(self, seed: int = 0):
        self.gen = torch.Generator().manual_seed(seed)
        n = len(JOINTS)
        self.default_joint_pos = torch.linspace(-0.4, 0.4, n).unsqueeze(0)
        self.kp = torch.full((1, n), 25.0)
        self.kd = torch.full((1, n), 0.5)
        self.action_scale = 0.25
        self.num_envs = 1
        self.last_action = torch.zeros(1, n)
        self._new_state(torch.zeros(1, n))

    def _r(self, *shape, scale=1.0):
        return torch.randn(*shape, generator=self.gen) * scale

    def _new_state(self, action: torch.Tensor) -> None:
        n = len(JOINTS)
        q = self._r(1, 4)
        self.data = {
            "root_lin_vel_b": self._r(1, 3, scale=0.5),
            "root_ang_vel_b": self._r(1, 3, scale=0.5),
            "root_quat_w": q / q.norm(),
            "joint_pos": self.default_joint_pos + 0.5 * action + self._r(1, n, scale=0.1),
            "joint_vel": self._r(1, n),
        }
        self.command = self._r(1, 3, scale=0.7)

    def reset(self) -> None:
        self.last_action = torch.zeros(1, len(JOINTS))
        self._new_state(torch.zeros(1, len(JOINTS)))

    def step(self, action: torch.Tensor) -> None:
        self.last_action = action.detach().clone()
        self._new_state(action.detach())


def _semantics(name, ref, kind=None, element_names=None, extra=None):
    from leapp.utils.tensor_description import TensorSemantics
    return TensorSemantics(name=name, ref=ref, kind=kind, element_names=element_names, extra=extra)


def observe(env: RandomEnv, task: str) -> torch.Tensor:
    """The policy observation group, computed from annotated reads (the proxies' job)."""
    from leapp import annotate

    def read(prop, kind=None, names=None):
        return annotate.input_tensors(task, _semantics(f"robot_{prop}", env.data[prop], kind, names,
                                                       {"connection": f"robot.data.{prop}"}))

    lin_vel = read("root_lin_vel_b")
    ang_vel = read("root_ang_vel_b")
    quat = read("root_quat_w")
    # projected_gravity from the root quaternion (ExportPatcher._wrap_projected_gravity)
    gravity_w = torch.zeros((*quat.shape[:-1], 3), dtype=quat.dtype)
    gravity_w[..., 2] = -1.0
    xyz, w = quat[..., :3], quat[..., 3:4]
    t = torch.cross(xyz, gravity_w, dim=-1) * 2.0
    gravity_b = gravity_w - w * t + torch.cross(xyz, t, dim=-1)
    command = annotate.input_tensors(task, _semantics("base_velocity", env.command, None, ["vx", "vy", "wz"],
                                                      {"connection": "command.base_velocity"}))
    joint_pos = read("joint_pos", None, JOINTS) - env.default_joint_pos      # joint_pos_rel
    joint_vel = read("joint_vel", None, JOINTS)
    last_action = annotate.state_tensors(task, {"last_action": env.last_action})
    return torch.cat([lin_vel, ang_vel, gravity_b, command, joint_pos, joint_vel, last_action], dim=-1)


OBS_DIM = 3 + 3 + 3 + 3 + 2 * len(JOINTS) + len(JOINTS)
ACT_DIM = len(JOINTS)


def apply_action(env: RandomEnv, task: str, raw_actions: torch.Tensor, export_method: str) -> torch.Tensor:
    """The action term and the output annotation (process_action + the tracing apply_action)."""
    from leapp import annotate
    target = env.default_joint_pos + env.action_scale * raw_actions
    annotate.update_state(task, {"last_action": raw_actions})
    outputs = [_semantics("robot_joint_pos_target", target, None, JOINTS,
                          {"connection": "robot.write_joint_position_target_to_sim_index"})]
    static = [_semantics(f"{TERM}_kp_gains", env.kp, "kp", JOINTS,
                         {"connection": "robot.write_joint_stiffness_to_sim_index"}),
              _semantics(f"{TERM}_kd_gains", env.kd, "kd", JOINTS,
                         {"connection": "robot.write_joint_damping_to_sim_index"})]
    annotate.output_tensors(task, outputs, static_outputs=static, export_with=export_method)
    return raw_actions


def graph_name(task: str) -> str:
    return task.replace("-Play", "").replace("-v0", "")


def graph_configs():
    from leapp import GraphConfigs
    return GraphConfigs(frequency=1.0 / (SIM_DT * DECIMATION))


class capture:
    """``leapp_capture``: start, yield the number of steps, stop and compile with validation."""

    def __init__(self, args: argparse.Namespace):
        self.args = args

    def __enter__(self) -> int:
        import leapp
        self.name = graph_name(self.args.task)
        leapp.start(self.name, save_path=self.args.export_save_path,
                    max_cached_io=max(self.args.validation_steps, 2))
        return max(self.args.validation_steps, 2)

    def __exit__(self, exc_type, exc, tb) -> None:
        import leapp
        leapp.stop()
        if exc_type is None:
            leapp.compile_graph(visualize=False, validate=self.args.validation_steps > 0,
                                graph_configs=graph_configs())


def policy_node(args: argparse.Namespace) -> str:
    """The LEAPP node of the policy: the task name (``ensure_env_spec_id``)."""
    return graph_name(args.task)


def raw_observation(env: RandomEnv) -> torch.Tensor:
    """The same observation as :func:`observe`, computed outside LEAPP (what the env returns)."""
    d = env.data
    quat = d["root_quat_w"]
    gravity_w = torch.tensor([[0.0, 0.0, -1.0]])
    xyz, w = quat[..., :3], quat[..., 3:4]
    t = torch.cross(xyz, gravity_w, dim=-1) * 2.0
    gravity_b = gravity_w - w * t + torch.cross(xyz, t, dim=-1)
    return torch.cat([d["root_lin_vel_b"], d["root_ang_vel_b"], gravity_b, env.command,
                      d["joint_pos"] - env.default_joint_pos, d["joint_vel"], env.last_action], dim=-1)
