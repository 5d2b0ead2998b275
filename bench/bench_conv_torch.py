"""bench_conv_torch.py - times PyTorch eager on one convolution layer, for
bench_conv's side-by-side table.

    /usr/bin/python3 bench/bench_conv_torch.py N C H W O K STRIDE PAD GROUPS THREADS ITERS [wall|cpu]

NCHW input [N, C, H, W], kernel [O, C/GROUPS, K, K], torch.nn.functional
.conv2d(stride, padding, groups). Prints one line:
    forward_median_seconds backward_median_seconds
where backward is torch.autograd.grad of the output for both the input and
the kernel (the graph kept, so only the backward kernels are timed). cpu: the
process's CPU time (time.process_time) instead of wall time.
"""
import sys
import time

import torch
import torch.nn.functional as F


CLOCK = time.perf_counter


def median(fn, iters):
    for _ in range(2):  # warm-up
        fn()
    t = []
    for _ in range(iters):
        t0 = CLOCK()
        fn()
        t.append(CLOCK() - t0)
    t.sort()
    return t[len(t) // 2]


def main():
    global CLOCK
    n, c, h, w, o, k, s, p, g, threads, iters = map(int, sys.argv[1:12])
    if len(sys.argv) > 12 and sys.argv[12] == "cpu":
        CLOCK = time.process_time
    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(n, c, h, w, generator=gen, requires_grad=True)
    wt = torch.randn(o, c // g, k, k, generator=gen, requires_grad=True)
    with torch.no_grad():
        fwd = median(lambda: F.conv2d(x, wt, stride=s, padding=p, groups=g),
                     iters)
    y = F.conv2d(x, wt, stride=s, padding=p, groups=g)
    gy = torch.randn(y.shape, generator=gen)
    bwd = median(lambda: torch.autograd.grad(y, (x, wt), gy,
                                             retain_graph=True), iters)
    print("%.9f %.9f" % (fwd, bwd))


if __name__ == "__main__":
    main()
