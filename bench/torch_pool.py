#!/usr/bin/python3
"""torch_pool.py - PyTorch eager on bench_pool.c's shapes ([8,64,112,112]
f32, ResNet's stem): max_pool2d(3, 2, 1) forward and backward, batch_norm
training forward and backward. Median of 11, one thread.

    /usr/bin/python3 bench/torch_pool.py
"""
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(1)
REPS = 11


def median_ms(fn):
    fn()
    t = []
    for _ in range(REPS):
        t0 = time.process_time()
        fn()
        t.append(time.process_time() - t0)
    return sorted(t)[REPS // 2] * 1e3


x = torch.rand(8, 64, 112, 112) + 0.5
w = torch.rand(64) + 0.5
b = torch.rand(64)
xg = x.clone().requires_grad_(True)
wg, bg = w.clone().requires_grad_(True), b.clone().requires_grad_(True)
y = F.max_pool2d(xg, 3, 2, 1)
gy = torch.rand_like(y)
z = F.batch_norm(xg, None, None, wg, bg, training=True, eps=1e-5)
gz = torch.rand_like(z)

rows = [
    ("max_pool2d forward", lambda: F.max_pool2d(x, 3, 2, 1)),
    ("max_pool2d backward", lambda: torch.autograd.grad(y, xg, gy, retain_graph=True)),
    ("batch_norm training forward",
     lambda: F.batch_norm(x, None, None, w, b, training=True, eps=1e-5)),
    ("batch_norm backward",
     lambda: torch.autograd.grad(z, [xg, wg, bg], gz, retain_graph=True)),
]
print("# PyTorch %s eager, [8,64,112,112] f32, median of %d, 1 thread" % (torch.__version__, REPS))
for name, fn in rows:
    print("%-42s %10.2f" % (name, median_ms(fn)))
