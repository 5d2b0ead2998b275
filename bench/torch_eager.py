"""torch_eager.py - times PyTorch eager on a hloscope model, for
bench_execute's side-by-side comparison.

    /usr/bin/python3 bench/torch_eager.py MODEL.json DUMP_DIR ITERS THREADS [f32|bf16]

DUMP_DIR holds input.npy and params/<state_dict name>.npy written by
hloscope (the same weights and input; a bf16 model's are its bf16 values,
exactly, as f32). bf16 runs the module and input at torch.bfloat16. Prints one line:
    median_seconds min_seconds max_relative_error_vs_DUMP_DIR/output.npy
"""
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "reference"))
import torch_models as tm  # noqa: E402


def main():
    model_path, dump, iters, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[sys.argv[5] if len(sys.argv) > 5 else "f32"]
    torch.set_num_threads(threads)
    desc = tm.load_json(model_path)
    model = tm.build(desc).float().eval()
    tm.load_params(model, os.path.join(dump, "params"))
    x = tm.load_input(os.path.join(dump, "input.npy")).float().to(dtype)
    model = model.to(dtype)
    times = []
    with torch.no_grad():
        for _ in range(2):  # warm-up
            y = model(x)
        for _ in range(iters):
            t0 = time.perf_counter()
            y = model(x)
            times.append(time.perf_counter() - t0)
    times.sort()
    ref = np.load(os.path.join(dump, "output.npy"))
    y = y.float().numpy()
    err = float(np.max(np.abs(y - ref)) / max(np.max(np.abs(ref)), 1e-30))
    print("%.9f %.9f %.3g" % (times[len(times) // 2], times[0], err))


if __name__ == "__main__":
    main()
