"""bench_gather_torch.py - times PyTorch eager on one gather or scatter
case, for bench_gather's side-by-side table.

    /usr/bin/python3 bench/bench_gather_torch.py CASE THREADS ITERS [wall|cpu]

CASE is one of bench_gather.c's: embedding (F.embedding of 4096 ids into a
[32000, 512] table), embedding_backward (zeros + index_add_ of 4096 rows:
what the embedding's gradient computes), take_along_dim (torch.gather of
[4096, 64] indices along dimension 1 of [4096, 1024]), scatter_add
(torch.zeros + scatter_add_ of those). Inputs are drawn as bench_gather
draws them (the same sizes; values do not change the work). Prints the
median seconds of ITERS runs after two warm-ups.
"""
import sys
import time

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True
import bench_conv_torch  # noqa: E402  (its median and clock)


def main():
    case, threads, iters = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    if len(sys.argv) > 4 and sys.argv[4] == "cpu":
        bench_conv_torch.CLOCK = time.process_time
    median = bench_conv_torch.median
    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(0)
    if case in ("embedding", "embedding_backward"):
        table = torch.randn(32000, 512, generator=gen)
        ids = torch.randint(0, 32000, (4096,), generator=gen)
        rows = torch.randn(4096, 512, generator=gen)
        if case == "embedding":
            fn = lambda: F.embedding(ids, table)
        else:
            fn = lambda: torch.zeros(32000, 512).index_add_(0, ids, rows)
    else:
        x = torch.randn(4096, 1024, generator=gen)
        idx = torch.randint(0, 1024, (4096, 64), generator=gen)
        src = torch.randn(4096, 64, generator=gen)
        if case == "take_along_dim":
            fn = lambda: torch.gather(x, 1, idx)
        else:
            fn = lambda: torch.zeros(4096, 1024).scatter_add_(1, idx, src)
    with torch.no_grad():
        print("%.9f" % median(fn, iters))


if __name__ == "__main__":
    main()
