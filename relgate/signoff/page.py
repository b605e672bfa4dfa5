"""The HTML page: one self-contained file (no network, no external script, style or font),
rendered from :mod:`relgate.signoff.page_model` by Jinja2 with autoescaping on, every
printed string first made inert (:func:`relgate.signoff.page_text.inert`: control
characters visible, lines capped) by the environment's ``finalize`` — escaping by default,
not by remembering. A Content-Security-Policy forbids every script but the page's own one
line (by its sha256), which only marks that scripts ran; the page reads the same without it.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache
from typing import Any

from relgate.signoff.page_measures import BAR_WIDTH
from relgate.signoff.page_model import Page
from relgate.signoff.page_text import inert

__all__ = ["SCRIPT", "CSP", "render_page"]

#: The page's only script: it marks the document so a browser test can tell scripts ran (and
#: that nothing else did). Nothing on the page depends on it.
SCRIPT = 'document.documentElement.setAttribute("data-page-script", "ran");'
CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-"
       + base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
       + "'; base-uri 'none'; form-action 'none'")


def _finalize(value: Any) -> Any:
    if isinstance(value, str) and not hasattr(value, "__html__"):  # the page's own script is markup already
        return inert(value)
    return value


@lru_cache(maxsize=1)
def _template():  # type: ignore[no-untyped-def]
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("relgate.signoff", "templates"),
                             autoescape=True, finalize=_finalize, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    return env.get_template("page.html.j2")


def render_page(page: Page) -> str:
    """The page's HTML: the same ``page`` gives the same bytes."""
    from markupsafe import Markup

    return _template().render(page=page, script=Markup(SCRIPT), csp=CSP, bar_width=BAR_WIDTH, middle=BAR_WIDTH / 2)
