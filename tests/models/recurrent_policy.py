"""A recurrent policy (verify --expected int8's calibration): observation -> Linear + SiLU -> GRU ->
LSTM -> (action mean through Tanh, value), over a short sequence of observations, with a tap after
each stage. Random (seeded) weights.

Taps, in model order: encoded, gru_out, lstm_out, action_pre.
"""
import torch
from torch import nn

from leapp_lab import tap

OBS, HIDDEN, ACT, STEPS = 24, 48, 6, 8


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(31)
        self.enc = nn.Linear(OBS, HIDDEN)
        self.gru = nn.GRU(HIDDEN, HIDDEN, batch_first=True)
        self.lstm = nn.LSTM(HIDDEN, HIDDEN, batch_first=True)
        self.mu = nn.Linear(HIDDEN, ACT)
        self.value = nn.Linear(HIDDEN, 1)
        self.eval()

    def forward(self, obs):
        x = tap(nn.functional.silu(self.enc(obs)), "encoded")
        g, _ = self.gru(x)
        g = tap(g, "gru_out")
        h, _ = self.lstm(g)
        h = tap(h, "lstm_out")
        mu = tap(self.mu(h), "action_pre")
        return {"action_mean": torch.tanh(mu), "value": self.value(h)}


def get_fwd_args():
    return (torch.randn(2, STEPS, OBS),)


def get_samples():
    g = torch.Generator().manual_seed(5)
    return [(torch.randn(2, STEPS, OBS, generator=g),) for _ in range(3)]
