"""The `nanopedia` MkDocs plugin: the failure encyclopedia inside an existing MkDocs site.

```yaml
plugins:
  - search
  - nanopedia:
      entries: entries   # directory of entry files, relative to mkdocs.yml
      section: failures  # URL prefix and nav section
```

It reuses the corpus stages as they are (`corpus.gather` loads, validates and links), reports every
problem through MkDocs' logger at `file:line:col`, and fails the build on any error (warnings fail
it in `--strict`, as MkDocs does for its own). The pages come from `mkdocs_pages` as generated
files, so MkDocs renders them with the site's theme, Markdown extensions, highlighter and search,
and checks every link between them.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.livereload import LiveReloadServer
from mkdocs.plugins import BasePlugin, get_plugin_logger
from mkdocs.structure import StructureItem
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.structure.nav import Navigation, Section
from mkdocs.structure.pages import Page
from mkdocs.structure.toc import AnchorLink
from mkdocs.utils import get_relative_url

from nanopedia.content.catalog import Catalog
from nanopedia.content.corpus import display, gather
from nanopedia.mkdocs.pages import Layout, pages
from nanopedia.site.render import render
from nanopedia.site.views import CATEGORY_TITLES
from nanopedia.site.views import Page as SitePage

log = get_plugin_logger("nanopedia")

_SEGMENT = r"[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*"
_SECTION = re.compile(rf"^{_SEGMENT}(?:/{_SEGMENT})*$")
_ANCHOR = re.compile(r'<a id="([^"<>]+)"></a>')
"""Exactly the empty anchors `mkdocs_pages` writes; entry text cannot make one (`<` is escaped)."""
_ENTRY_HEADING = re.compile(r'<(h[1-6])([^>]*)><a id="(md-[a-z0-9-]+)"></a>(.*?)</\1>', re.S)
"""A heading of entry text, its site id first (`mkdocs_markdown.HEADING_ANCHOR`)."""
_ID = re.compile(r'\sid="([^"]*)"')


class _Section(c.Type[str]):
    """A URL prefix: path segments of letters, digits and `.`, `_`, `-` between them."""

    def __init__(self) -> None:
        super().__init__(str, default="failures")

    def run_validation(self, value: object) -> str:
        value = super().run_validation(value).strip("/")
        if not _SECTION.match(value):
            raise c.ValidationError(
                f"'{value}' is not a URL prefix; use letters, digits and '-', e.g. 'failures'"
            )
        return value


class NanopediaConfig(base.Config):
    entries = c.Dir(exists=True, default="entries")
    """Directory of entry files and `tags.yaml`, relative to `mkdocs.yml`."""
    section = _Section()
    """URL prefix of every generated page; its last segment, capitalised, is the nav title."""


class NanopediaPlugin(BasePlugin[NanopediaConfig]):
    """Validates the entries, adds their pages as generated files and files them in the nav."""

    def __init__(self) -> None:
        super().__init__()
        self.catalog: Catalog | None = None
        """The corpus of the current build, set by `on_files`."""
        self.generated: dict[str, File] = {}
        """Docs-relative path to each file the current build added, set by `on_files`."""

    @property
    def layout(self) -> Layout:
        return Layout(self.config.section)

    @property
    def title(self) -> str:
        """`failures` gives `Failures`; a name typed with capitals is kept as typed."""
        name = self.config.section.rsplit("/", 1)[-1].replace("-", " ").replace("_", " ")
        return name.capitalize() if name.islower() else name

    def on_files(self, files: Files, /, *, config: MkDocsConfig) -> Files:
        catalog = self._gather()
        generated = pages(catalog, self.layout, self.title)
        if "index" in catalog.tags:
            raise PluginError(
                f"nanopedia: tag 'index' would replace the tag index {self.layout.tags_index}; "
                "rename it in tags.yaml"
            )
        moved = [self.layout.entry(a) for src in catalog.sources for a in src.entry.aliases]
        taken = sorted(
            uri for uri in [*generated, *moved] if files.get_file_from_path(uri) is not None
        )
        if taken:
            raise PluginError(
                f"nanopedia: {', '.join(taken)} already exist(s) in {config.docs_dir}; the "
                f"plugin generates every page under '{self.config.section}/': move those files "
                "or set another 'section'"
            )
        self.catalog = catalog
        self.generated = {}
        for uri, text in generated.items():
            # Not in MkDocs' own nav (no "omitted from nav" warnings): `on_nav` files them.
            file = File.generated(config, uri, content=text, inclusion=InclusionLevel.NOT_IN_NAV)
            files.append(file)
            self.generated[uri] = file
        return files

    def _gather(self) -> Catalog:
        """The validated corpus; every problem is logged at its location, errors stop the build."""
        root = Path(self.config.entries)
        catalog, problems = gather(root)
        errors = [p for p in problems if p.severity == "error"]
        for found in problems:
            (log.error if found.severity == "error" else log.warning)(str(found))
        if errors:
            raise PluginError(
                f"nanopedia: {len(errors)} error(s) in the entries in {display(root)}; "
                "fix them and build again"
            )
        return catalog

    def on_nav(self, nav: Navigation, /, *, config: MkDocsConfig, files: Files) -> Navigation:
        """Our section goes where a hand-written nav names the section index, else at the end.

        `nav: [..., Failures: failures/index.md, ...]` places it; any other mention of our pages
        in the nav is dropped, since the section lists them all.
        """
        section = self._section(config)
        items, placed = self._replace(list(nav.items), section)
        if not placed:
            items.append(section)
        _link_parents(items, None)
        ordered = _pages(items)
        for previous, page in zip([None, *ordered], ordered, strict=False):
            page.previous_page = previous
            if previous is not None:
                previous.next_page = page
        if ordered:
            ordered[-1].next_page = None
        return Navigation(items, ordered)

    def _section(self, config: MkDocsConfig) -> Section:
        """Overview, entries by category, then the tags."""
        if self.catalog is None:
            raise PluginError("nanopedia: the nav event ran before the files event")
        layout = self.layout

        def page(uri: str) -> Page:
            return Page(None, self.generated[uri], config)

        groups: dict[str, list[StructureItem]] = {}
        for src in self.catalog.sources:
            groups.setdefault(src.entry.category, []).append(page(layout.entry(src.entry.id)))
        categories: list[StructureItem] = [
            Section(html.escape(name), groups[slug])
            for slug, name in CATEGORY_TITLES.items()
            if slug in groups
        ]
        tags: list[StructureItem] = [page(layout.tags_index)]
        tags += [page(layout.tag(slug)) for slug in self.catalog.tags]
        return Section(
            html.escape(self.title), [page(layout.index), *categories, Section("Tags", tags)]
        )

    def _replace(self, items: list[Any], section: Section) -> tuple[list[Any], bool]:
        """The nav without our pages, with `section` where the section index was."""
        index = self.generated[self.layout.index]
        out: list[Any] = []
        placed = False
        for item in items:
            if isinstance(item, Page) and item.file.src_uri in self.generated:
                if item.file is index and not placed:
                    out.append(section)
                    placed = True
                continue
            if isinstance(item, Section):
                children, inside = self._replace(item.children, section)
                placed = placed or inside
                if not children:
                    continue
                item.children = children
            out.append(item)
        return out, placed

    def on_page_content(
        self, output: str, /, *, page: Page, config: MkDocsConfig, files: Files
    ) -> str:
        """Give entry headings the site's prefixed ids, then drop our anchor where the heading
        already has that id, so no id appears twice."""
        if page.file.src_uri not in self.generated:
            return output
        output = _prefix_heading_ids(output, page.toc)
        taken = set(_toc_ids(page.toc))
        return _ANCHOR.sub(lambda m: "" if m.group(1) in taken else m.group(0), output)

    def on_post_build(self, *, config: MkDocsConfig) -> None:
        """A page at each former id of an entry (its aliases) that sends the reader on, so
        links to a renamed entry keep working, as they do on a Nanopedia site."""
        if self.catalog is None:
            return
        for src in self.catalog.sources:
            target = self.generated[self.layout.entry(src.entry.id)]
            for alias in src.entry.aliases:
                moved = File(
                    self.layout.entry(alias), None, config.site_dir, config.use_directory_urls
                )
                href = get_relative_url(target.url, moved.url)
                path = Path(moved.abs_dest_path)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(
                    render(
                        SitePage(
                            moved.dest_uri,
                            "moved.html",
                            {"target": {"href": href, "title": src.entry.title}},
                        )
                    )
                )

    def on_serve(
        self, server: LiveReloadServer, /, *, config: MkDocsConfig, builder: Any
    ) -> LiveReloadServer:
        """Rebuild when an entry or the tag registry changes."""
        server.watch(self.config.entries)
        return server


def _prefix_heading_ids(output: str, toc: Any) -> str:
    """Each entry heading with the id the site gives it (`md-search`) instead of the one MkDocs'
    toc made from its text (`search`, which themes use for their own elements), in the heading,
    its permalink and the page's table of contents alike."""
    moved: dict[str, str] = {}

    def move(match: re.Match[str]) -> str:
        tag, attrs, ident, inner = match.groups()
        old = _ID.search(attrs)
        if old is None:
            return f'<{tag}{attrs} id="{ident}">{inner}</{tag}>'
        moved[old[1]] = ident
        inner = inner.replace(f'href="#{old[1]}"', f'href="#{ident}"')
        attrs = attrs.replace(old[0], f' id="{ident}"')
        return f"<{tag}{attrs}>{inner}</{tag}>"

    output = _ENTRY_HEADING.sub(move, output)
    _rename_toc(toc, moved)
    return output


def _rename_toc(items: Any, moved: dict[str, str]) -> None:
    for item in items:
        if isinstance(item, AnchorLink):
            item.id = moved.get(item.id, item.id)
            _rename_toc(item.children, moved)


def _toc_ids(items: Any) -> list[str]:
    out: list[str] = []
    for item in items:
        if isinstance(item, AnchorLink):
            out.append(item.id)
            out += _toc_ids(item.children)
    return out


def _link_parents(items: list[Any], parent: Section | None) -> None:
    for item in items:
        item.parent = parent
        if isinstance(item, Section):
            _link_parents(item.children, item)


def _pages(items: list[Any]) -> list[Page]:
    out: list[Page] = []
    for item in items:
        if isinstance(item, Page):
            out.append(item)
        elif isinstance(item, Section):
            out += _pages(item.children)
    return out
