"""Modules written in plain PyTorch that call hloscope.scan inside their
forward, for tests/python/scan_test.py: an Elman RNN whose step reads the
module's own weights, a scan with a nested-tuple carry and tuple xs and
ys, and a step that calls nn.Linear submodules."""
import torch
import torch.nn as nn

import hloscope


class ElmanRNN(nn.Module):
    """h_t = tanh(x_t W_ih^T + h_{t-1} W_hh^T + b) over x [seq, batch,
    features]: carry = the hidden state, ys = every h_t. The batch size
    comes from x.shape (a concrete trace)."""

    def __init__(self, features, hidden):
        super().__init__()
        self.w_ih = nn.Parameter(torch.randn(hidden, features) * 0.3)
        self.w_hh = nn.Parameter(torch.randn(hidden, hidden) * 0.3)
        self.b = nn.Parameter(torch.randn(hidden) * 0.1)

    def forward(self, x):
        h0 = torch.zeros(x.shape[1], self.w_hh.shape[0])

        def step(h, xt):
            h = torch.tanh(xt @ self.w_ih.t() + h @ self.w_hh.t() + self.b)
            return h, h

        last, hs = hloscope.scan(step, h0, x)
        return hs * last


class NestedCarry(nn.Module):
    """A carry ((sum, mix), count), xs (a, b) and ys (sum, (mix, sum *
    mix)), on values a Linear computes from x [seq, batch, 4]."""

    def __init__(self, features=4, width=8):
        super().__init__()
        self.fc = nn.Linear(features, width)

    def forward(self, x):
        h = self.fc(x)

        def step(carry, xt):
            (s, m), n = carry
            a, b = xt
            s2 = s + a
            m2 = m * 0.5 + torch.sigmoid(b) * s2
            return ((s2, m2), n + 1.0), (s2, (m2, s2 * m2))

        batch, width = h.shape[1], h.shape[2]
        init = ((torch.zeros(batch, width), torch.ones(batch, width)),
                torch.zeros(batch, width))
        ((s, m), n), (ss, (ms, ps)) = hloscope.scan(step, init, (h, h * 2))
        return ss.sum(0) + ms.mean(0) + ps[-1] + s * m + n


class LinearStep(nn.Module):
    """A step that calls submodules: h_t = relu(cell(h_{t-1}) + x_t),
    y_t = head(h_t), over x [seq, batch, width]."""

    def __init__(self, width=8, out=3, batch=2):
        super().__init__()
        self.batch, self.width = batch, width
        self.cell = nn.Linear(width, width)
        self.head = nn.Linear(width, out)

    def forward(self, x):
        def step(h, xt):
            h = torch.relu(self.cell(h) + xt)
            return h, self.head(h)

        _, ys = hloscope.scan(step, torch.zeros(self.batch, self.width), x)
        return ys
