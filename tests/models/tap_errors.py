"""Models that misuse taps, one class per error prepare must name (used as namespaces by the tests)."""
import torch
from torch import nn

from leapp_lab import Tap, tap


class BranchNotTaken(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.use_aux = False

    def forward(self, x):
        h = tap(self.fc(x), "features")
        if self.use_aux:
            h = tap(h * 2, "aux_branch")
        return h


class SampleBranch(nn.Module):
    """The tap fires only for inputs with a large value: sample 0 never reaches it."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        if float(x.abs().max()) > 10:
            h = tap(h, "saturated")
        return h


class OptimisedAway(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        tap(h * 2, "doubled")          # the returned value is never used
        return torch.relu(h)


class Bfloat16Tap(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = tap(self.fc(x).to(torch.bfloat16), "half_features")
        return h.float()


class DuplicateNames(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x):
        x = tap(self.a(x), "feat")
        x = tap(self.b(x), "feat")
        return x


def duplicate_tap_modules():
    return nn.Sequential(
        nn.Linear(4, 4),
        Tap("same"),
        nn.ReLU(),
        Tap("same"),
    )


def fwd_args():
    return (torch.randn(2, 4),)


class TapInCond(nn.Module):
    """A tap inside a torch.cond branch: torch compiles the branch and cannot trace tap()."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        def positive(x):
            return tap(self.fc(x), "pos_branch")

        return torch.cond(x.sum() > 0, positive, lambda x: -x, (x,))


class TapInWhileLoop(nn.Module):
    def forward(self, x):
        def body(i, x):
            return i + 1, tap(x * 2, name="loop_body")

        return torch.while_loop(lambda i, x: i < 3, body, (torch.tensor(0), x))[1]
