"""The seed's example (issue #16), as a torch_xla user writes it, with only
its import changed from torch_xla.experimental.scan_layers to hloscope."""
import torch.nn as nn

from hloscope import scan_layers


class DecoderLayer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.linear = nn.Linear(dim, dim)

    def forward(self, x):
        return self.linear(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([DecoderLayer(1024) for _ in range(64)])

    def forward(self, x):
        x = scan_layers(self.layers, x)
        return x
