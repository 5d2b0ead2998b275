"""Loading what `hloscope run --dump DIR` wrote back into a module."""
import os

import numpy as np
import torch


def load_dump(module, directory, *, strict=True):
    """Loads DIR/params/<state_dict name>.npy into module with
    load_state_dict. Entries the export added that are not state
    (`_constants.*`) are skipped. Returns the dict of tensors loaded."""
    pdir = os.path.join(directory, "params")
    sd = {}
    files = sorted(os.listdir(pdir)) if os.path.isdir(pdir) else []
    for f in files:
        if not f.endswith(".npy") or f.startswith("_constants.") or \
                "._constants." in f:
            continue
        sd[f[:-4]] = torch.from_numpy(np.load(os.path.join(pdir, f)))
    own = module.state_dict()
    # Integer bookkeeping buffers (num_batches_tracked) are not exported.
    for k, v in own.items():
        if k not in sd and not v.is_floating_point():
            sd[k] = v
    module.load_state_dict(sd, strict=strict)
    return sd
