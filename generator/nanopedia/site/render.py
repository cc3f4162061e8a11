"""The Jinja2 environment: templates from `theme/templates`, autoescaped, strict about names.

Entry text only ever reaches Jinja as data (escaped, or `Markup` from the safe renderer); it is
never compiled as a template, so `{{ 7*7 }}` in an entry stays text.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from pathlib import Path

import jinja2

from nanopedia.errors import fail
from nanopedia.site.views import Page
from nanopedia.theme_dir import THEME  # the default theme; `build` and `serve` import it from here


def environment(theme: Path = THEME) -> jinja2.Environment:
    """A new environment of the theme's templates (each compiles once in it)."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(theme / "templates"),
        autoescape=jinja2.select_autoescape(("html", "xml")),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,
    )


class Templates:
    """A theme's templates, each compiled once, and kept compiled in a folder for later
    processes when `compiled` names one (compiling the entry page's templates was most of the
    cost of rendering one page). A build's context holds one per theme, as jinja hangs its
    caches on its `Environment`; Jinja checks each template's source against what it compiled,
    so an edited theme is compiled again."""

    __slots__ = ("theme", "environment")

    def __init__(self, theme: Path = THEME, compiled: Path | None = None) -> None:
        self.theme = theme
        self.environment = environment(theme)
        if compiled is not None:
            try:
                compiled.mkdir(parents=True, exist_ok=True)
            except OSError:
                return  # compiled each time, as without it
            self.environment.bytecode_cache = _Compiled(str(compiled))

    def render(self, page: Page) -> bytes:
        """One page's bytes; a template mistake becomes a located E040 problem."""
        try:
            template = self.environment.get_template(page.template)
            return template.render(page.context).encode("utf-8")
        except jinja2.TemplateSyntaxError as err:
            fail(
                f"theme/templates/{err.name or page.template}",
                "E040",
                err.message or str(err),
                at=(err.lineno, 1),
            )
        except jinja2.TemplateError as err:
            name, line = _template_line(err, self.theme, page.template)
            fail(
                f"theme/templates/{name}",
                "E040",
                f"{err} (while rendering {page.path})",
                at=(line, 1 if line else 0),
            )


class _Compiled(jinja2.FileSystemBytecodeCache):
    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass  # the cache folder went away: only speed is lost


def render(page: Page, theme: Path = THEME) -> bytes:
    """One page's bytes, its templates compiled for it alone (`Templates` keeps them)."""
    return Templates(theme).render(page)


def _template_line(err: Exception, theme: Path, template: str) -> tuple[str, int]:
    """The template and line a rendering error was raised at: Jinja gives the frames of
    template code the template's file name and line, so the innermost such frame says."""
    folder = str(theme / "templates") + "/"
    for frame in reversed(traceback.extract_tb(err.__traceback__)):
        if frame.filename.startswith(folder):
            return frame.filename.removeprefix(folder), frame.lineno or 0
    return template, 0


def static_files(theme: Path = THEME) -> Iterator[tuple[str, bytes]]:
    """The theme's static files as (site path, bytes), copied as they are."""
    root = theme / "static"
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        yield f"static/{path.relative_to(root).as_posix()}", path.read_bytes()
