"""The plain data each template gets, built in one place.

Templates only lay out what is here: every link is already relative to its page, every piece of
entry text is either plain text (escaped by Jinja) or `Markup` made by the safe renderer in
`markdown.py`. Nothing in this module writes HTML.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from markupsafe import Markup

from nanopedia.config import Config
from nanopedia.content.catalog import Links, Node
from nanopedia.content.load import dotted
from nanopedia.content.validate import markdown_fields
from nanopedia.model import Dates, Entry
from nanopedia.pins import repro_pins
from nanopedia.site import highlight
from nanopedia.site.joined import identity
from nanopedia.site.markdown import Markdown, PageEnv, render, render_inline, render_title

INLINE_FIELDS = frozenset({"symptoms", "affected_systems", "confirm", "prevention"})
CATEGORY_TITLES = {
    "mixed-precision": "Mixed precision",
    "distributed": "Distributed training",
    "numerics": "Numerics",
    "memory": "Memory",
    "performance": "Performance",
    "configuration": "Configuration",
    "compilation": "Compilation",
    "data": "Data",
    "cuda": "CUDA and GPU errors",
    "hardware": "Hardware faults",
    "autograd": "Autograd",
    "checkpointing": "Checkpoints and state dicts",
    "environment": "Environment: installs, versions and drivers",
}
DOMAIN_TITLES = {
    "workload": "Workload",
    "environment": "Environment",
    "infrastructure": "Infrastructure",
    "scheduler": "Scheduler",
    "data": "Data",
}
"""How each failure domain of `model.Domain` is named on pages, in reading order."""
ACTION_TITLES = {
    "fix-code": "Fix the code",
    "fix-config": "Fix the configuration",
    "fix-environment": "Fix the environment",
    "fix-data": "Fix the data",
    "retry": "Retry",
    "resume-elsewhere": "Resume elsewhere",
    "drain-node": "Drain the node",
    "reset-gpu": "Reset the GPU",
    "investigate": "Investigate",
}
"""How each action of `model.Action` is named on pages."""
SECTIONS = (
    ("symptoms", "Symptoms"),
    ("causes", "Root causes"),
    ("mechanism", "Mechanism"),
    ("affected-systems", "Affected systems"),
    ("confirm", "How to confirm"),
    ("fix", "Fix"),
    ("prevention", "Prevention"),
    ("code-examples", "Code examples"),
    ("reproduce", "Reproduce it"),
    ("faq", "FAQ"),
    ("references", "References"),
    ("related", "Related entries"),
    ("referenced-by", "Referenced by"),
    ("also-tagged", "Also tagged"),
)
"""Entry page sections in reading order: (stable anchor id, heading)."""


@dataclass(frozen=True, slots=True)
class Page:
    """One output file: where it goes, which template lays it out, and the data it gets."""

    path: str
    """Path inside the site, always with `/`."""
    template: str
    context: dict[str, Any]


class Card(NamedTuple):
    """What other pages show about an entry: small, so every entry's card fits in memory."""

    id: str
    title: str
    category: str
    tags: tuple[str, ...]
    summary: str
    """Summary rendered for pages one folder below the root (tag pages)."""
    summary_source: str
    """The summary's markdown, for pages at other depths (feeds)."""
    domains: tuple[str, ...]
    """The failure domains of the entry's root causes, in `DOMAIN_TITLES` order (home page)."""
    key: str
    """A hash of the other fields: how a page's key counts the card (`plan.fingerprint`)."""


def fragments(
    entry: Entry,
    highlighted: Mapping[tuple[str, str], str] | None = None,
    markdown: Markdown | None = None,
) -> dict[str, str]:
    """Every markdown field rendered, and every code example highlighted, keyed by field path;
    `highlighted` has code already highlighted, by (code, language); `markdown` is the build's
    renderer (None: one that remembers nothing).

    Depends on the entry alone (entry links are relative, not resolved), so it is cached by the
    entry's content hash. Heading ids are unique across all fields of the page.
    """
    page = PageEnv(markdown=markdown)
    out: dict[str, str] = {}
    for where, text in markdown_fields(entry):
        inline = where[0] in INLINE_FIELDS
        out[dotted(where)] = render_inline(text, page) if inline else render(text, page)
    for name, code, language in highlighted_sources(entry):
        done = highlighted.get((code, language)) if highlighted else None
        out[name] = done or (
            markdown.highlighter.code(code, language)
            if markdown
            else highlight.code(code, language)
        )
    return out


def highlighted_sources(entry: Entry) -> list[tuple[str, str, str]]:
    """(fragment key, code, language) of everything an entry page highlights: the code
    examples, each repro's broken script and each line of its fix (`fix_lines`)."""
    out: list[tuple[str, str, str]] = [
        (f"code_examples[{i}].code", x.code, x.language) for i, x in enumerate(entry.code_examples)
    ]
    for i, r in enumerate(entry.repro):
        out.append((f"repro[{i}].broken", r.broken, "python"))
        out += [
            (f"repro[{i}].fix[{j}]", text, "python")
            for j, (kind, text) in enumerate(fix_lines(r.broken, r.fixed))
            if kind != "gap"
        ]
    return out


def fix_lines(broken: str, fixed: str) -> list[tuple[str, str]]:
    """What the fix changes: the unified diff of the two scripts, with a line of context, as
    (kind, code line) pairs, kind one of `del`, `ins`, `ctx` and `gap` (between hunks). A
    reader sees the change at a glance, and the page does not carry the script twice."""
    out: list[tuple[str, str]] = []
    kinds = {"-": "del", "+": "ins", " ": "ctx"}
    diff = difflib.unified_diff(broken.splitlines(), fixed.splitlines(), n=1, lineterm="")
    for line in list(diff)[2:]:
        if line.startswith("@@"):
            if out:
                out.append(("gap", "…"))
            continue
        out.append((kinds[line[0]], line[1:]))
    return out


def reproduced_with(ranks: int, pins: Mapping[str, str]) -> str:
    """`Reproduced with PyTorch 2.13.0 (CPU, 2 ranks, gloo)`, from the pinned environment."""
    torch = f"PyTorch {pins['torch']}" if "torch" in pins else "PyTorch"
    where = "CPU, 1 rank" if ranks == 1 else f"CPU, {ranks} ranks, gloo"
    return f"Reproduced with {torch} ({where})"


def card(entry: Entry, markdown: Markdown | None = None) -> Card:
    domains = {c.domain for c in entry.root_causes}
    fields = (
        entry.id,
        entry.title,
        entry.category,
        tuple(entry.tags),
        render(entry.summary, PageEnv("../entries/", markdown=markdown)),
        entry.summary,
        tuple(d for d in DOMAIN_TITLES if d in domains),
    )
    return Card(*fields, identity(repr(fields).encode()))


def _site(config: Config, root: str, path: str, title: str, description: str) -> dict[str, Any]:
    """What the base template needs on every page."""
    return {
        "site": {"title": config.title, "description": config.description, "feeds": config.feeds},
        "page": {
            "title": title,
            "description": description,
            "root": root,
            "path": path,
            "canonical": config.base_url + path if config.base_url else None,
        },
    }


def _link(c: Card, root: str) -> dict[str, Any]:
    return {"id": c.id, "title": c.title, "href": f"{root}entries/{c.id}.html"}


@dataclass(frozen=True, slots=True)
class Neighbours:
    """What an entry page shows of the rest of the corpus: small, so it travels to a worker."""

    tags: dict[str, str]
    """The entry's registered tags: slug to title."""
    related: list[tuple[str, str]]
    """(id, title) of each related entry that exists."""
    backlinks: list[tuple[str, str]]
    """(id, title) of each entry that links to this one."""
    also: list[tuple[str, str]]
    """(id, title) of the 'also tagged' suggestions."""


def neighbours(
    node: Node, links: Links, cards: Mapping[str, Card], also: Iterable[str]
) -> Neighbours:
    """What an entry page shows of others; `also` is `Suggestions.also` of the entry."""
    return Neighbours(
        {t: links.tags[t].title for t in node.tags if t in links.tags},
        [(i, cards[i].title) for i in node.related if i in cards],
        [
            (i, cards[i].title) for i in links.backlinks.get(node.id, ()) if i not in node.related
        ],  # listed once, under related
        [(i, cards[i].title) for i in also],
    )


def entry_page(
    e: Entry, near: Neighbours, config: Config, frags: dict[str, str], dates: Dates | None = None
) -> Page:
    """The entry page in the 3 a.m. reading order."""
    root = "../"
    md = {k: Markup(v) for k, v in frags.items()}
    causes = {c.id: c for c in e.root_causes}

    def links(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
        return [{"id": i, "title": t, "href": f"{root}entries/{i}.html"} for i, t in pairs]

    related, backlinks, also = links(near.related), links(near.backlinks), links(near.also)
    context = _site(config, root, f"entries/{e.id}.html", e.title, _plain(e.summary))
    context["entry"] = {
        "id": e.id,
        "title": e.title,
        "category": {
            "slug": e.category,
            "title": CATEGORY_TITLES[e.category],
            "href": f"{root}index.html#{e.category}",
        },
        "tags": [
            {"slug": t, "title": title, "href": f"{root}tags/{t}.html"}
            for t, title in near.tags.items()
        ],
        "summary": md["summary"],
        "causes": [
            {
                "anchor": f"cause-{c.id}",
                "title": _title(c.title),
                "domain": c.domain,
                "domain_title": DOMAIN_TITLES[c.domain],
                "action": c.action,
                "action_title": ACTION_TITLES[c.action],
                "explanation": md[f"root_causes[{i}].explanation"],
            }
            for i, c in enumerate(e.root_causes)
        ],
        "symptoms": [
            {
                "text": md[f"symptoms[{i}].text"],
                "cause_anchor": f"cause-{s.cause}",
                "cause_title": _title(causes[s.cause].title) if s.cause in causes else s.cause,
            }
            for i, s in enumerate(e.symptoms)
        ],
        "mechanism": md["mechanism"],
        "systems": [
            {
                "name": md[f"affected_systems[{i}].name"],
                "package": a.package,
                "ranges": [r.words() for r in a.affected],
                "versions": md.get(f"affected_systems[{i}].versions"),
                "notes": md.get(f"affected_systems[{i}].notes"),
            }
            for i, a in enumerate(e.affected_systems)
        ],
        "confirm": [md[f"confirm[{i}]"] for i in range(len(e.confirm))],
        "fix": [
            {
                "anchor": f"fix-{i + 1}",
                "title": _title(f.title),
                "causes": [
                    {"anchor": f"cause-{c}", "title": _title(causes[c].title)}
                    for c in f.causes
                    if c in causes
                ],
                "detail": md[f"fix[{i}].detail"],
            }
            for i, f in enumerate(e.fix)
        ],
        "prevention": [md[f"prevention[{i}]"] for i in range(len(e.prevention))],
        "code_examples": [
            {
                "anchor": f"example-{i + 1}",
                "title": _title(x.title),
                "stack": x.stack,
                "language": x.language,
                "code": md[f"code_examples[{i}].code"],
                "why": md[f"code_examples[{i}].why"],
            }
            for i, x in enumerate(e.code_examples)
        ],
        "checked_with": list(e.checked_with.items()),
        "status": {"repros": len(e.repro), "reviewed": e.reviewed},
        "repros": [
            {
                "anchor": f"repro-{r.id}",
                "title": _title(r.title),
                "stack": r.stack,
                "broken": md[f"repro[{i}].broken"],
                "fix": [
                    (kind, md.get(f"repro[{i}].fix[{j}]", text))
                    for j, (kind, text) in enumerate(fix_lines(r.broken, r.fixed))
                ],
                "silent": r.expect == "warning",
                "line": reproduced_with(r.ranks, repro_pins()),
                "command": f"nanopedia verify {e.id}",
            }
            for i, r in enumerate(e.repro)
        ],
        "faq": [
            {
                "anchor": f"faq-{i + 1}",
                "question": _title(q.question),
                "answer": md[f"faq[{i}].answer"],
            }
            for i, q in enumerate(e.faq)
        ],
        "references": [{"title": r.title, "url": r.url, "kind": r.kind} for r in e.references],
        "related": related,
        "backlinks": backlinks,
        "also": also,
        "edit_url": f"{config.repo_url.rstrip('/')}/{e.id}.yaml" if config.repo_url else None,
        "dates": dates.as_dict() if dates else None,
    }
    filled = {
        "code-examples": e.code_examples,
        "reproduce": e.repro,
        "faq": e.faq,
        "related": related,
        "referenced-by": backlinks,
        "also-tagged": also,
    }
    context["sections"] = [{"anchor": a, "title": t} for a, t in SECTIONS if filled.get(a, True)]
    return Page(f"entries/{e.id}.html", "entry.html", context)


_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def _plain(markdown_text: str) -> str:
    """A one-line description for `<meta name="description">`: link text without targets, no
    emphasis or code markers, at most 300 characters."""
    text = _MD_LINK.sub(r"\1", markdown_text).replace("`", "").replace("**", "")
    return " ".join(text.split())[:300]


def _title(text: str) -> Markup:
    """A cause's, fix step's, code example's or question's title: code spans, else as typed."""
    return Markup(render_title(text))


Listed = tuple[tuple[str, str], ...]
"""(id, title) of entries, in id order."""


def category_lists(cards: Mapping[str, Card]) -> tuple[tuple[str, Listed], ...]:
    """Every category that has entries, in reading order, with its entries."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for c in cards.values():
        groups.setdefault(c.category, []).append((c.id, c.title))
    return tuple((slug, tuple(groups[slug])) for slug in CATEGORY_TITLES if slug in groups)


class TagCount(NamedTuple):
    slug: str
    title: str
    entries: int
    """How many entries carry the tag."""


def domain_lists(cards: Mapping[str, Card]) -> tuple[tuple[str, Listed], ...]:
    """Every failure domain that has entries, in `DOMAIN_TITLES` order, with the entries that
    have a root cause in it (an entry can be in several)."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for c in cards.values():
        for d in c.domains:
            groups.setdefault(d, []).append((c.id, c.title))
    return tuple((slug, tuple(groups[slug])) for slug in DOMAIN_TITLES if slug in groups)


class IndexInputs(NamedTuple):
    categories: tuple[tuple[str, Listed], ...]
    tags: tuple[TagCount, ...]
    domains: tuple[tuple[str, Listed], ...]


def index_page(inputs: IndexInputs, config: Config) -> Page:
    """Home: what Nanopedia is, entries by category, tags with counts."""
    context = _site(config, "", "index.html", config.title, config.description)
    context["categories"] = [
        {
            "slug": slug,
            "title": CATEGORY_TITLES[slug],
            "entries": [(f"entries/{i}.html", title) for i, title in listed],
        }
        for slug, listed in inputs.categories
    ]
    context["domains"] = [
        {
            "slug": f"domain-{slug}",
            "title": DOMAIN_TITLES[slug],
            "entries": [(f"entries/{i}.html", title) for i, title in listed],
        }
        for slug, listed in inputs.domains
    ]
    context["tags"] = _tag_list(inputs.tags, "tags/")
    context["count"] = sum(len(listed) for _, listed in inputs.categories)
    return Page("index.html", "index.html", context)


def _tag_list(tags: tuple[TagCount, ...], prefix: str) -> list[dict[str, Any]]:
    return [
        {"slug": t.slug, "title": t.title, "count": t.entries, "href": f"{prefix}{t.slug}.html"}
        for t in tags
    ]


class TagInputs(NamedTuple):
    slug: str
    title: str
    description: str
    """Markdown, from the tag registry."""
    members: tuple[Card, ...]
    """The entries with the tag, in id order."""


def tag_page(inputs: TagInputs, config: Config) -> Page:
    """A tag's title and description from the registry, then its entries with summaries."""
    slug = inputs.slug
    context = _site(
        config, "../", f"tags/{slug}.html", f"#{inputs.title}", _plain(inputs.description)
    )
    context["tag"] = {
        "slug": slug,
        "title": inputs.title,
        "description": Markup(render(inputs.description, PageEnv("../entries/"))),
        "entries": [{**_link(c, "../"), "summary": Markup(c.summary)} for c in inputs.members],
    }
    return Page(f"tags/{slug}.html", "tag.html", context)


def tags_index(tags: tuple[TagCount, ...], config: Config) -> Page:
    context = _site(config, "../", "tags/index.html", "Tags", "Every tag with its entries.")
    context["tags"] = _tag_list(tags, "")
    return Page("tags/index.html", "tags.html", context)


class RedirectInputs(NamedTuple):
    alias: str
    """The former id."""
    current: str
    title: str
    """The current entry's title."""


def redirect_page(inputs: RedirectInputs, config: Config) -> Page:
    """The page at a former id that sends the reader to the current one."""
    context = _site(config, "../", f"entries/{inputs.current}.html", inputs.title, "")
    context["target"] = {"href": f"{inputs.current}.html", "title": inputs.title}
    return Page(f"entries/{inputs.alias}.html", "redirect.html", context)


def not_found_page(config: Config) -> Page:
    """404: absolute links when the base URL is known (it is served at any depth), else relative."""
    context = _site(config, config.base_url, "404.html", "Page not found", "")
    context["page"]["canonical"] = None
    return Page("404.html", "404.html", context)


def search_page(config: Config) -> Page:
    """The results page (`search.html?q=...`): `search.js` fills it in the browser."""
    context = _site(
        config,
        "",
        "search.html",
        "Search",
        "Search every entry by title, exact error message, tag, symptom or cause.",
    )
    return Page("search.html", "search.html", context)


def sitemap(paths: tuple[str, ...], config: Config) -> Page:
    """`sitemap.xml` of the pages worth indexing (planned only with a base URL: it needs
    absolute ones)."""
    urls = [config.base_url + p for p in sorted(paths)]
    return Page("sitemap.xml", "sitemap.xml", {"urls": urls})


def stylesheet(config: Config) -> Page:
    """The code highlighting colours, light and dark."""
    return Page("static/pygments.css", "pygments.css", highlight.styles())


DIAGNOSE_BUDGET_S = 120
"""Default time budget of the diagnosis page, in seconds (the reader can change it)."""


def diagnose_page(config: Config) -> Page:
    """`diagnose.html`: paste or drop a log; the matching runs in the reader's browser."""
    context = _site(
        config,
        "",
        "diagnose.html",
        "Diagnose a log",
        "Paste a training log and see the entries that explain it, the lines that "
        "prove it and the rank that failed first, without the log leaving the browser.",
    )
    context["budget"] = DIAGNOSE_BUDGET_S
    return Page("diagnose.html", "diagnose.html", context)


FIXED = {
    "diagnose.html": diagnose_page,
    "404.html": not_found_page,
    "search.html": search_page,
    "static/pygments.css": stylesheet,
}
"""The pages that show the settings alone, by path."""
