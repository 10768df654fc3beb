"""rsl_rl (rsl-rl-lib 5.0.1, as Isaac Lab pins it): Isaac Lab's ``export_rsl_rl.py`` loop around a
random-initialised ``MLPModel`` / ``RNNModel`` actor with an empirical observation normaliser.

Variants (``--bug``):
- ``train-normalizer``: the actor is taken from the algorithm without ``eval_mode()`` and the loop
  calls ``update_normalization`` every step, as the training rollout does: the normaliser's running
  mean and variance change while LEAPP records;
- ``item-clip``: the actions are clipped with a bound read with ``.item()`` from the observation;
- ``mlp-recipe`` (``--rnn lstm``/``gru``): the recurrent actor traced with the MLP loop, its hidden
  state never declared (no ``state_tensors`` / ``update_state``);
- ``warm-start`` (``--rnn``): the policy is stepped before ``leapp.start()`` and not reset.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from tensordict import TensorDict  # noqa: E402

import isaac_export as ie  # noqa: E402

VARIANTS = ("train-normalizer", "item-clip", "mlp-recipe", "warm-start")


def make_policy(rnn: str | None):
    """What ``runner.get_inference_policy()`` returns after ``runner.load``: the actor model."""
    from rsl_rl.models import MLPModel, RNNModel
    obs = TensorDict({"policy": torch.zeros(1, ie.OBS_DIM)}, batch_size=[1])
    kw = dict(obs=obs, obs_groups={"actor": ["policy"]}, obs_set="actor", output_dim=ie.ACT_DIM,
              hidden_dims=[64, 32], activation="elu", obs_normalization=True,
              distribution_cfg={"class_name": "rsl_rl.modules.distribution:GaussianDistribution",
                                "init_std": 1.0})
    policy = RNNModel(**kw, rnn_type=rnn, rnn_hidden_dim=32, rnn_num_layers=1) if rnn else MLPModel(**kw)
    # a checkpoint's normaliser holds statistics of the training data
    policy.train()
    for _ in range(4):
        policy.update_normalization(TensorDict({"policy": 2.0 * torch.randn(64, ie.OBS_DIM) + 0.5},
                                               batch_size=[64]))
    return policy


def get_hidden(policy):
    return policy.get_hidden_state()


def state_dict_from_actor_hidden(h):
    if h is None:
        return {}
    if isinstance(h, tuple):
        return {f"actor_state_{i}": t for i, t in enumerate(h)}
    return {"actor_state": h}


def ensure_hidden(policy):
    h = get_hidden(policy)
    if h is not None:
        return h
    rnn = policy.rnn.rnn
    zeros = torch.zeros(rnn.num_layers, 1, rnn.hidden_size)
    h = (zeros.clone(), zeros.clone()) if isinstance(rnn, torch.nn.LSTM) else zeros
    policy.rnn.hidden_state = h
    return h


def main() -> None:
    import argparse
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--rnn", choices=("lstm", "gru"), default=None)
    known, rest = pre.parse_known_args(sys.argv[1:])
    sys.argv[1:] = rest
    args = ie.parse_args(VARIANTS)
    torch.manual_seed(0)
    from leapp import annotate

    policy = make_policy(known.rnn)
    if args.bug != "train-normalizer":
        policy.eval()                          # runner.get_inference_policy(): alg.eval_mode()
    recurrent = bool(getattr(policy, "is_recurrent", False)) and args.bug != "mlp-recipe"
    env = ie.RandomEnv(seed=1)
    node = ie.policy_node(args)
    if args.bug == "warm-start":
        # a few steps of play before the export capture, no reset afterwards
        with torch.inference_mode():
            for _ in range(3):
                obs = torch.randn(1, ie.OBS_DIM)
                env.step(policy(TensorDict({"policy": obs}, batch_size=[1])))
    with ie.capture(args) as num_steps:
        if args.bug != "warm-start":
            env.reset()
        for _ in range(num_steps):
            with torch.inference_mode():
                obs = ie.observe(env, node)
                if recurrent:
                    h = ensure_hidden(policy)
                    reg = annotate.state_tensors(node, state_dict_from_actor_hidden(h))
                    policy.rnn.hidden_state = reg if not isinstance(h, tuple) or isinstance(reg, tuple) else (reg,)
                obs_td = TensorDict({"policy": obs}, batch_size=[1])
                actions = policy(obs_td)
                if args.bug == "item-clip":
                    bound = float(obs.abs().max().item())
                    actions = torch.clamp(actions, -bound, bound) / bound
                if recurrent:
                    annotate.update_state(node, state_dict_from_actor_hidden(get_hidden(policy)))
                if args.bug == "train-normalizer":
                    policy.update_normalization(obs_td)     # the rollout's process_env_step
                ie.apply_action(env, node, actions, args.export_method)
                env.step(actions)


if __name__ == "__main__":
    main()
