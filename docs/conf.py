"""Sphinx configuration of herdlab's docs (``pip install -e ".[docs]"``, then
``sphinx-build -W --keep-going -b html docs docs/_build/html``).

Why Sphinx with MyST and not MkDocs: with ``-W --keep-going`` every warning fails the build (a broken
cross-reference or link between pages, a missing page, a page in no toctree), so CI catches what
would rot; and well-kept extensions generate the references from the sources: sphinx-click documents
the CLI from the click commands themselves. The scenario and metrics references come from a small
local extension, ``_ext/herdlab_docs.py``, that renders herdlab's own JSON Schemas and the analysis's
definitions as Markdown tables when the page is read (sphinx-jsonschema would nest raw schema keywords
into tables instead of one table per TOML table of a scenario file). MyST lets the pages stay plain
Markdown that reads well on a repository host too.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path[:0] = [str(DOCS / "_ext"), str(DOCS.parent)]  # the extension, and this checkout's herdlab

project = "herdlab"
author = "herdlab contributors"
extensions = ["myst_parser", "sphinx_click", "herdlab_docs"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store"]

# MyST: headings get anchors (links such as [text](page.md#a-heading) resolve), `term` / `: text`
# definition lists, and `{ref}` targets of the generated references.
myst_heading_anchors = 3
myst_enable_extensions = ["deflist", "colon_fence"]

html_theme = "furo"
html_title = "herdlab"
html_static_path: list[str] = []
smartquotes = False  # keep `--option` and quotes as typed
