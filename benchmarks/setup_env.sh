#!/usr/bin/env bash
# Create/refresh the benchmark's own virtualenv (.venv-bench), separate from the project's.
# Idempotent: re-running only installs what is missing.
#   bash benchmarks/setup_env.sh
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
VENV="${VENV_BENCH:-$ROOT/.venv-bench}"
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip)

# 1. torch first, with the exact pin: this version exists as a local CPU wheel; any other spec
#    resolves to a multi-GB CUDA build.
"${PIP[@]}" install "torch==2.13.0"
# 2. the peers; the requirements file repeats torch==2.13.0 so nothing can replace it.
"${PIP[@]}" install -r "$HERE/requirements.txt"
# 3. calibkit itself, with its fused kernel (the [fast] extra).
"${PIP[@]}" install -e "$ROOT[fast,spark]"
"$VENV/bin/python" -c "import torch; assert torch.__version__.startswith('2.13.0'), torch.__version__; print('torch', torch.__version__)"
