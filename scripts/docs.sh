#!/usr/bin/env bash
# Build the documentation site into docs/_build/html with warnings as errors: installs the
# `docs` extra into .venv when it is missing (the project itself must be installed there, as
# scripts/test.sh does), then runs sphinx-build -W. Extra arguments go to sphinx-build.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x .venv/bin/python ] || python3 -m venv .venv
if ! .venv/bin/python -c "import sphinx, numpydoc, myst_parser, pydata_sphinx_theme" 2>/dev/null; then
    .venv/bin/pip install -q -e '.[docs]'
fi
.venv/bin/python -m sphinx -W --keep-going -b html docs docs/_build/html "$@"
