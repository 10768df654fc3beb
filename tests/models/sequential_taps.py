"""An nn.Sequential with Tap modules between its layers. Taps: test_1, test_2."""
import torch
from torch import nn

from leapp_lab import Tap


def Model():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.ReLU(),
        Tap("test_1"),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        Tap("test_2"),
        nn.Linear(16, 10),
    )


def get_fwd_args():
    return (torch.randn(1, 3, 8, 8),)
