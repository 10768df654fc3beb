"""An MLP policy with tap() markers: observation -> (action mean, value).

Taps, in model order: obs_norm, hidden_1, hidden_2, hidden_3, action_mean_pre.
"""
import torch
from torch import nn

from leapp_lab import tap

OBS, ACT, HIDDEN = 12, 4, 32


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("obs_mean", torch.linspace(-0.5, 0.5, OBS))
        self.register_buffer("obs_std", torch.linspace(0.5, 1.5, OBS))
        self.fc1 = nn.Linear(OBS, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, HIDDEN)
        self.fc3 = nn.Linear(HIDDEN, HIDDEN)
        self.mu = nn.Linear(HIDDEN, ACT)
        self.value = nn.Linear(HIDDEN, 1)

    def forward(self, obs):
        x = (obs - self.obs_mean) / self.obs_std
        x = tap(x, "obs_norm")
        h = torch.tanh(self.fc1(x))
        h = tap(h, "hidden_1")
        h = torch.nn.functional.elu(self.fc2(h))
        h = tap(h, "hidden_2")
        h = torch.relu(self.fc3(h))
        h = tap(h, "hidden_3")
        mu = tap(self.mu(h), "action_mean_pre")
        return {"action_mean": torch.tanh(mu), "value": self.value(h)}


def get_fwd_args():
    return (torch.randn(2, OBS),)


def get_samples():
    return [(torch.randn(2, OBS) * (1 + i),) for i in range(3)]
