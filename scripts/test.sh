#!/usr/bin/env bash
# Every test, from a fresh machine: headless Chromium (for the HTML report's browser test) when it
# is missing, the virtual environment, the project with its test dependencies, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/chromium ]; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium
fi
python3 -m venv .venv
.venv/bin/pip install -q -e '.[dev,spark]'
.venv/bin/python -m pytest "$@"
