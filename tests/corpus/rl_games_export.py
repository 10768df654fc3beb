"""rl_games (rl-games 1.6.5): Isaac Lab's ``export_rl_games.py`` loop around a random-initialised
``continuous_a2c_logstd`` actor-critic built by rl_games' own ModelBuilder, with its input
normaliser (``RunningMeanStd``) and, with ``--rnn lstm``, an LSTM before the MLP; the action is
``PpoPlayerContinuous.get_action``'s (the deterministic mean, clamped and rescaled).

Isaac Lab disables TorchScript before importing rl_games (its models ``torch.jit.script`` the
normaliser, which LEAPP cannot trace into); so does this script.

Variants (``--bug``):
- ``torchscript-enabled``: the script imports rl_games without disabling TorchScript first, so the
  scripted normaliser is left out of the traced graph;
- ``train-mode``: the model is left in training mode (no ``model.eval()``), so every forward pass
  updates the normaliser's running mean and variance while LEAPP records.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import isaac_export as ie  # noqa: E402

VARIANTS = ("train-mode", "torchscript-enabled")


def make_model(rnn: bool):
    from rl_games.algos_torch.model_builder import ModelBuilder
    network = {"name": "actor_critic", "separate": False,
               "space": {"continuous": {"mu_activation": "None", "sigma_activation": "None",
                                        "mu_init": {"name": "default"},
                                        "sigma_init": {"name": "const_initializer", "val": 0},
                                        "fixed_sigma": True}},
               "mlp": {"units": [64, 32], "activation": "elu", "d2rl": False,
                       "initializer": {"name": "default"}, "regularizer": {"name": "None"}}}
    if rnn:
        network["rnn"] = {"name": "lstm", "units": 32, "layers": 1, "before_mlp": True}
    builder = ModelBuilder().load({"model": {"name": "continuous_a2c_logstd"}, "network": network})
    model = builder.build({"actions_num": ie.ACT_DIM, "input_shape": (ie.OBS_DIM,), "num_seqs": 1,
                           "value_size": 1, "normalize_value": True, "normalize_input": True})
    model.train()
    with torch.no_grad():      # the input statistics a checkpoint holds
        for _ in range(4):
            model.norm_obs(2.0 * torch.randn(64, ie.OBS_DIM) + 0.5)
    return model


def to_bounds(low, high, action):
    """[-1, 1] mapped onto [low, high] (the player's action rescaling)."""
    return low + (action + 1.0) * (high - low) / 2.0


def main() -> None:
    import argparse
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--rnn", choices=("lstm",), default=None)
    known, rest = pre.parse_known_args(sys.argv[1:])
    sys.argv[1:] = rest
    args = ie.parse_args(VARIANTS)
    if args.bug != "torchscript-enabled":
        torch.jit._state.disable()        # export_rl_games.py, before rl_games is imported
    torch.manual_seed(0)
    from leapp import annotate

    model = make_model(known.rnn is not None)
    if args.bug != "train-mode":
        model.eval()                      # PpoPlayerContinuous.__init__
    low, high = -torch.ones(ie.ACT_DIM), torch.ones(ie.ACT_DIM)
    env = ie.RandomEnv(seed=3)
    node = ie.policy_node(args)
    states = None
    with ie.capture(args) as num_steps:
        env.reset()
        if model.is_rnn():                # agent.init_rnn()
            states = [torch.zeros((s.size()[0], 1, s.size()[2])) for s in model.get_default_rnn_state()]
        for _ in range(num_steps):
            with torch.inference_mode():
                # the observation comes first: in Isaac Lab the env computed it through the
                # annotating proxies (the node's inputs) before the policy's state is registered
                obs = ie.observe(env, node)
                if states is not None:
                    names = [f"actor_state_{i}" for i in range(len(states))]
                    reg = annotate.state_tensors(node, dict(zip(names, states)))
                    states = list(reg) if isinstance(reg, (list, tuple)) else [reg]
                res = model({"is_train": False, "prev_actions": None, "obs": obs, "rnn_states": states})
                mu = res["mus"]
                if states is not None:
                    states = res["rnn_states"]
                    annotate.update_state(node, {f"actor_state_{i}": s for i, s in enumerate(states)})
                actions = to_bounds(low, high, mu.clamp(-1.0, 1.0))
                ie.apply_action(env, node, actions, args.export_method)
                env.step(actions)


if __name__ == "__main__":
    main()
