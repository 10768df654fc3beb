"""stable-baselines3 (>= 2.6, as Isaac Lab pins it) with VecNormalize: Isaac Lab's
``export_sb3.py`` loop around a random-initialised ``ActorCriticPolicy`` whose observations are
normalised with the saved VecNormalize statistics in torch (``normalize_observation``), and whose
Box actions are clipped as ``BasePolicy.predict`` does (``_scale_or_clip_actions``).

Variants (``--bug``):
- ``training-vecnormalize``: the VecNormalize sidecar is still in training mode and the loop steps
  it, so its running statistics (``obs_rms``) update after every traced pass, as
  ``VecNormalize.step_wait`` does with ``training=True``.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import isaac_export as ie  # noqa: E402

VARIANTS = ("training-vecnormalize",)


class _SidecarEnv:
    """The vectorised env VecNormalize wraps while training: only its spaces matter here."""

    def __init__(self, observation_space, action_space):
        import gymnasium as gym

        class One(gym.Env):
            def __init__(self):
                self.observation_space, self.action_space = observation_space, action_space

            def reset(self, *, seed=None, options=None):
                return self.observation_space.sample(), {}

            def step(self, action):
                return self.observation_space.sample(), 0.0, False, False, {}

        from stable_baselines3.common.vec_env import DummyVecEnv
        self.venv = DummyVecEnv([One])


def make_agent():
    import gymnasium as gym
    from stable_baselines3.common.policies import ActorCriticPolicy
    from stable_baselines3.common.vec_env import VecNormalize
    obs_space = gym.spaces.Box(-np.inf, np.inf, (ie.OBS_DIM,), np.float32)
    act_space = gym.spaces.Box(-1.0, 1.0, (ie.ACT_DIM,), np.float32)
    policy = ActorCriticPolicy(obs_space, act_space, lambda _: 3e-4, net_arch=[64, 64],
                               activation_fn=torch.nn.ELU)
    vec_normalize = VecNormalize(_SidecarEnv(obs_space, act_space).venv, norm_obs=True, norm_reward=False,
                                 clip_obs=10.0)
    rng = np.random.default_rng(0)
    for _ in range(8):       # the statistics a trained sidecar holds
        vec_normalize.obs_rms.update(rng.normal(0.5, 2.0, (32, ie.OBS_DIM)))
    return policy, vec_normalize


def normalized(obs, vec_normalize):
    """The saved VecNormalize statistics applied in torch (traceable): centre, scale, clip."""
    rms = vec_normalize.obs_rms
    scale = torch.rsqrt(torch.as_tensor(rms.var, dtype=obs.dtype) + vec_normalize.epsilon)
    centred = obs - torch.as_tensor(rms.mean, dtype=obs.dtype)
    bound = vec_normalize.clip_obs
    return (centred * scale).clamp(-bound, bound)


def box_action(policy, actions):
    """A Box action as predict() returns it: rescaled from [-1, 1] when squashed, else clipped."""
    lo, hi = (torch.as_tensor(b, dtype=actions.dtype) for b in (policy.action_space.low,
                                                                 policy.action_space.high))
    if policy.squash_output:
        return lo + (hi - lo) * (actions + 1.0) / 2.0
    return actions.clamp(lo, hi)


def main() -> None:
    args = ie.parse_args(VARIANTS)
    torch.manual_seed(0)
    policy, vec_normalize = make_agent()
    vec_normalize.training = args.bug == "training-vecnormalize"
    env = ie.RandomEnv(seed=2)
    node = ie.policy_node(args)
    previous = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(False)
    try:
        with ie.capture(args) as num_steps:
            env.reset()
            for _ in range(num_steps):
                with torch.inference_mode():
                    obs = normalized(ie.observe(env, node), vec_normalize)
                    policy.set_training_mode(False)
                    actions = box_action(policy, policy._predict(obs, deterministic=True))
                    ie.apply_action(env, node, actions, args.export_method)
                    env.step(actions)
                    if vec_normalize.training and vec_normalize.norm_obs:
                        vec_normalize.obs_rms.update(ie.raw_observation(env).numpy())
    finally:
        torch.distributions.Distribution.set_default_validate_args(previous)


if __name__ == "__main__":
    main()
