"""The pages the MkDocs plugin adds: entry, tag and index pages as Markdown, with their view data.

The same catalog, section anchors, category titles and "also tagged" rule as the site (`views.py`),
laid out by the Markdown templates in `theme/mkdocs/`. Templates print every value through
`_finalize`, which escapes plain strings for Python-Markdown; only `Md` values (made here by
`mkdocs_markdown`) are printed as they are, so a template cannot forget to escape entry text.
Links are relative `.md` paths, which MkDocs resolves for its URL style and checks in `--strict`.
"""

from __future__ import annotations

import html
import posixpath
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from nanopedia.content.catalog import Catalog
from nanopedia.content.links import entry_target
from nanopedia.content.suggest import Suggestions
from nanopedia.mkdocs import markdown as mdx
from nanopedia.model import Entry
from nanopedia.pins import repro_pins
from nanopedia.site.views import (
    ACTION_TITLES,
    CATEGORY_TITLES,
    DOMAIN_TITLES,
    SECTIONS,
    fix_lines,
    reproduced_with,
)
from nanopedia.theme_dir import THEME

TEMPLATES = THEME / "mkdocs"
_SECTION_TITLES = dict(SECTIONS)


class Md(str):
    """Markdown already made safe by `mkdocs_markdown`; templates print it unchanged."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Layout:
    """Where each generated page lives inside the docs directory, below the section prefix."""

    section: str
    """URL prefix, e.g. `failures` or `reference/failures`."""

    @property
    def index(self) -> str:
        return f"{self.section}/index.md"

    @property
    def tags_index(self) -> str:
        return f"{self.section}/tags/index.md"

    def entry(self, entry_id: str) -> str:
        return f"{self.section}/entries/{entry_id}.md"

    def tag(self, slug: str) -> str:
        return f"{self.section}/tags/{slug}.md"


def _finalize(value: Any) -> str:
    """Every `{{ }}` in a template: `Md` as is, anything else escaped as text."""
    if isinstance(value, Md):
        return value
    return mdx.text(str(value))


def _link(label: Any, href: str) -> Md:
    return Md(f"[{_finalize(label)}]({mdx.url(href)})")


def _anchor(ident: str) -> Md:
    """An empty `<a id>`: an anchor the page keeps whatever slug function the site's toc uses."""
    return Md(f'<a id="{html.escape(ident)}"></a>')


def _section(ident: str) -> Md:
    """A section heading with the site's stable anchor and title."""
    return Md(f"## {_anchor(ident)}{mdx.heading(_SECTION_TITLES[ident])}")


def _quote(value: str) -> Md:
    """Markdown inside a blockquote (the quick-answer box)."""
    return Md("\n".join(f"> {line}" if line else ">" for line in value.split("\n")))


@cache
def environment(templates: Path = TEMPLATES) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates),
        autoescape=False,
        finalize=_finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,
    )
    env.globals.update(link=_link, anchor=_anchor, section=_section)
    env.filters["quote"] = _quote
    env.filters["heading"] = lambda value: (
        value if isinstance(value, Md) else Md(mdx.heading(str(value)))
    )
    return env


def _title(value: str) -> dict[str, Md]:
    """A nested title (cause, fix step, code example, question) as a heading and as the text
    of a link, its code spans kept as code as on the site."""
    return {"title": Md(mdx.title(value, mdx.heading)), "label": Md(mdx.title(value))}


def _rel(target: str, page: str) -> str:
    return posixpath.relpath(target, posixpath.dirname(page))


class _Pages:
    """Builds every page of one catalog for one layout."""

    def __init__(self, catalog: Catalog, layout: Layout) -> None:
        self.catalog = catalog
        self.layout = layout
        self.env = environment()
        self.suggestions = Suggestions(catalog.links)

    def resolver(self, page: str) -> mdx.Resolve:
        """`entry:<id>#anchor` as the relative link from `page` to that entry's page."""

        def resolve(href: str) -> str:
            target = entry_target(href) or ""
            fragment = href.partition("#")[2]
            path = _rel(self.layout.entry(target), page)
            return mdx.url(path + ("#" + fragment) * bool(fragment))

        return resolve

    def render(self, template: str, **context: Any) -> str:
        return self.env.get_template(template).render(**context)

    def entry_link(self, entry_id: str, page: str) -> dict[str, Any]:
        entry = self.catalog.by_id[entry_id].entry
        return {"title": entry.title, "href": _rel(self.layout.entry(entry_id), page)}

    def entry(self, e: Entry) -> tuple[str, str]:
        page = self.layout.entry(e.id)
        resolve = self.resolver(page)
        ids: set[str] = set()  # heading ids given out on this page, as on the site
        block = lambda s: Md(mdx.block(s, resolve, ids=ids))  # noqa: E731
        inline = lambda s: Md(mdx.inline(s, resolve))  # noqa: E731
        causes = {c.id: c for c in e.root_causes}
        backlinks = self.catalog.backlinks.get(e.id, ())
        view = {
            "title": e.title,
            "category": {
                "title": CATEGORY_TITLES[e.category],
                "href": f"{_rel(self.layout.index, page)}#{e.category}",
            },
            "tags": [
                {"title": f"#{self.catalog.tags[t].title}", "href": _rel(self.layout.tag(t), page)}
                for t in e.tags
                if t in self.catalog.tags
            ],
            "summary": Md(mdx.block(e.summary, resolve, nested=True, ids=ids)),
            "causes": [
                {
                    "anchor": f"cause-{c.id}",
                    **_title(c.title),
                    "answer": f"{DOMAIN_TITLES[c.domain]} · {ACTION_TITLES[c.action]}",
                    "explanation": block(c.explanation),
                }
                for c in e.root_causes
            ],
            "status": {"repros": len(e.repro), "reviewed": e.reviewed},
            "symptoms": [
                {
                    "text": inline(s.text),
                    "anchor": f"cause-{s.cause}",
                    "cause": _title(causes[s.cause].title)["label"]
                    if s.cause in causes
                    else s.cause,
                }
                for s in e.symptoms
            ],
            "mechanism": block(e.mechanism),
            "systems": [
                Md(
                    f"<strong>{mdx.inline(a.name, resolve)}</strong>"
                    + (f" {mdx.inline(a.versions, resolve)}" if a.versions else "")
                    + (
                        f" ({mdx.code_span(a.package)}: "
                        + "; ".join(r.words() for r in a.affected)
                        + ")"
                        if a.package
                        else ""
                    )
                    + (f": {mdx.inline(a.notes, resolve)}" if a.notes else "")
                )
                for a in e.affected_systems
            ],
            "confirm": [inline(c) for c in e.confirm],
            "fix": [
                {
                    "anchor": f"fix-{i}",
                    **_title(f.title),
                    "detail": block(f.detail),
                    "causes": [
                        {"label": _title(causes[c].title)["label"], "href": f"#cause-{c}"}
                        for c in f.causes
                        if c in causes
                    ],
                }
                for i, f in enumerate(e.fix, 1)
            ],
            "prevention": [inline(p) for p in e.prevention],
            "code_examples": [
                {
                    "anchor": f"example-{i}",
                    **_title(x.title),
                    "stack": x.stack,
                    "code": Md(mdx.fenced(x.code, x.language)),
                    "why": block(x.why),
                }
                for i, x in enumerate(e.code_examples, 1)
            ],
            "checked_with": list(e.checked_with.items()),
            "repros": [
                {
                    "anchor": f"repro-{r.id}",
                    **_title(r.title),
                    "stack": r.stack,
                    "line": reproduced_with(r.ranks, repro_pins()),
                    "command": Md(mdx.code_span(f"nanopedia verify {e.id}")),
                    "broken": Md(mdx.fenced(r.broken, "python")),
                    "fix": Md(
                        mdx.fenced(
                            "\n".join(
                                {"del": "- ", "ins": "+ ", "ctx": "  ", "gap": ""}[kind] + text
                                for kind, text in fix_lines(r.broken, r.fixed)
                            ),
                            "diff",
                        )
                    ),
                }
                for r in e.repro
            ],
            "faq": [
                {
                    "anchor": f"faq-{i}",
                    "question": _title(q.question)["title"],
                    "answer": block(q.answer),
                }
                for i, q in enumerate(e.faq, 1)
            ],
            "references": [{"title": r.title, "href": r.url, "kind": r.kind} for r in e.references],
            "related": [self.entry_link(i, page) for i in e.related if i in self.catalog.by_id],
            "backlinks": [self.entry_link(i, page) for i in backlinks if i not in e.related],
            "also": [
                self.entry_link(i, page)
                for i in self.suggestions.also(self.catalog.links.nodes[e.id])
            ],
        }
        return page, self.render("entry.md.j2", entry=view)

    def tag(self, slug: str) -> tuple[str, str]:
        page = self.layout.tag(slug)
        resolve = self.resolver(page)
        tag = self.catalog.tags[slug]
        ids: set[str] = set()
        description = Md(mdx.block(tag.description, resolve, ids=ids))
        entries = [
            {
                **self.entry_link(i, page),
                "summary": Md(mdx.block(self.catalog.by_id[i].entry.summary, resolve, ids=ids)),
            }
            for i in self.catalog.by_tag[slug]
            if i in self.catalog.by_id
        ]
        view = {
            "title": f"#{tag.title}",
            "description": description,
            "entries": entries,
            "index": _rel(self.layout.tags_index, page),
        }
        return page, self.render("tag.md.j2", tag=view)

    def tag_list(self, page: str) -> list[dict[str, Any]]:
        return [
            {
                "title": f"#{tag.title}",
                "count": len(self.catalog.by_tag[slug]),
                "href": _rel(self.layout.tag(slug), page),
            }
            for slug, tag in self.catalog.tags.items()
        ]

    def tags_index(self) -> tuple[str, str]:
        page = self.layout.tags_index
        return page, self.render("tags.md.j2", tags=self.tag_list(page))

    def index(self, title: str) -> tuple[str, str]:
        page = self.layout.index
        groups: dict[str, list[dict[str, Any]]] = {}
        for src in self.catalog.sources:
            groups.setdefault(src.entry.category, []).append(self.entry_link(src.entry.id, page))
        categories = [
            {"anchor": slug, "title": name, "entries": groups[slug]}
            for slug, name in CATEGORY_TITLES.items()
            if slug in groups
        ]
        return page, self.render(
            "index.md.j2",
            title=title,
            count=len(self.catalog.sources),
            categories=categories,
            tags=self.tag_list(page),
            tags_index=_rel(self.layout.tags_index, page),
        )


def pages(catalog: Catalog, layout: Layout, title: str) -> dict[str, str]:
    """Every generated page, docs-relative path to Markdown: index, entries, tags, tag index."""
    build = _Pages(catalog, layout)
    out = dict([build.index(title)])
    out.update(build.entry(src.entry) for src in catalog.sources)
    out.update(build.tag(slug) for slug in catalog.tags)
    out.update([build.tags_index()])
    return out
