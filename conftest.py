"""Collection settings shared by the tests and the doctests of src/."""

import importlib.util

# The numba kernels are an optional extra; without numba their module cannot be imported.
collect_ignore_glob = [] if importlib.util.find_spec("numba") else ["src/calibkit/_numba_*.py"]
# The torchmetrics Metric is an optional extra; without torchmetrics its module cannot be imported.
if not importlib.util.find_spec("torchmetrics"):
    collect_ignore_glob.append("src/calibkit/torch.py")
