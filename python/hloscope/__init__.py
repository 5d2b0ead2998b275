"""hloscope for PyTorch users: export an nn.Module to hloscope's model
JSON, torch_xla's scan_layers / scan / place_to_host spelt the same way,
and a client for hloscope's REST API (see docs/PYTORCH.md)."""
from .markers import (ScanLayersError, place_to_device, place_to_host, scan,
                      scan_layers)
from .export import ExportError, export
from .client import Client, HloscopeError
from .dump import load_dump

__all__ = ["export", "ExportError", "scan_layers", "scan", "place_to_host",
           "place_to_device", "ScanLayersError", "Client", "HloscopeError",
           "load_dump"]
