"""torch.export refuses this model (a data-dependent Python branch); the TorchScript exporter
traces it (one branch), so prepare falls back to TorchScript with the reason logged."""
import torch
from torch import nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
    def forward(self, x):
        h = self.fc(x)
        if h.sum() > 0:        # data-dependent Python branch: torch.export refuses it
            h = h * 2
        return torch.relu(h)
def get_fwd_args():
    return (torch.randn(2, 4),)
