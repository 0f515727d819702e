"""Sphinx configuration of calibkit's documentation site.

Why these tools: calibkit's docstrings are numpydoc, as those of numpy, scipy and scikit-learn,
whose users are calibkit's, so the API reference is rendered by ``numpydoc`` from
``sphinx.ext.autosummary`` pages (one per public name); the pages under ``docs/`` are Markdown
and stay Markdown (readable on a code host as they are), rendered by ``myst-parser``; the
``pydata-sphinx-theme`` is the theme of numpy, scipy and pandas. The gallery's figures are drawn
at build time from the example data that ships in the repository (``_ext/gallery.py``).

Build with ``bash scripts/docs.sh`` (warnings are errors); every code block of the pages is run
by ``tests/test_docs.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent / "src"))  # document the source tree, not an installed copy

import calibkit  # noqa: E402

project = "calibkit"
author = "the calibkit authors"
copyright = "the calibkit authors"  # noqa: A001
release = calibkit.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "gallery",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "_templates", "_ext", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]

# MyST: anchors for the pages' links to sections (``conventions.md#...``)
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]

# autosummary and numpydoc: one page per public name, members documented on the class's page
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"  # the numpydoc Parameters section says the types
autodoc_default_options = {"members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

nitpicky = False

html_theme = "pydata_sphinx_theme"
html_title = f"calibkit {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_static_path: list[str] = []
