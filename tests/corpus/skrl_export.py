"""skrl (2.1, as Isaac Lab requires): Isaac Lab's ``export_skrl.py`` loop around a Gaussian policy
instantiated by skrl's own model instantiator (the YAML network Isaac Lab's skrl configs use),
observations standardised by skrl's ``RunningStandardScaler``, the action is the mean action
(``outputs["mean_actions"]``), as ``PPO.act`` computes it.

Variants (``--bug``):
- ``train-scaler``: the observation preprocessor is called with ``train=True`` while exporting (as
  ``PPO.record_transition`` does during a rollout), so its running mean and variance update on every
  traced pass.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import isaac_export as ie  # noqa: E402

VARIANTS = ("train-scaler",)


def make_agent():
    import gymnasium as gym
    from skrl.resources.preprocessors.torch import RunningStandardScaler
    from skrl.utils.model_instantiators.torch import gaussian_model
    obs_space = gym.spaces.Box(-np.inf, np.inf, (ie.OBS_DIM,), np.float32)
    act_space = gym.spaces.Box(-1.0, 1.0, (ie.ACT_DIM,), np.float32)
    policy = gaussian_model(observation_space=obs_space, action_space=act_space, device="cpu",
                            clip_actions=False, clip_log_std=True, min_log_std=-20.0, max_log_std=2.0,
                            initial_log_std=0.0,
                            network=[{"name": "net", "input": "OBSERVATIONS", "layers": [64, 32],
                                      "activations": "elu"}],
                            output="ACTIONS")
    scaler = RunningStandardScaler(size=obs_space, device="cpu")
    for _ in range(4):      # the statistics a checkpoint holds
        scaler(2.0 * torch.randn(64, ie.OBS_DIM) + 0.5, train=True)
    return policy, scaler


def main() -> None:
    args = ie.parse_args(VARIANTS)
    torch.manual_seed(0)
    policy, scaler = make_agent()
    policy.eval()                     # agent.enable_training_mode(False, apply_to_models=True)
    scaler.eval()
    env = ie.RandomEnv(seed=4)
    node = ie.policy_node(args)
    with ie.capture(args) as num_steps:
        env.reset()
        for _ in range(num_steps):
            with torch.inference_mode():
                obs = ie.observe(env, node)
                inputs = {"observations": scaler(obs, train=args.bug == "train-scaler"), "states": None}
                _, outputs = policy.act(inputs, role="policy")
                actions = outputs["mean_actions"]
                ie.apply_action(env, node, actions, args.export_method)
                env.step(actions)


if __name__ == "__main__":
    main()
