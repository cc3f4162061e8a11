"""Convert the shared benchmark corpus (`entries.jsonl`) into real Nanopedia entry files.

The JSON lines use neutral field names; this maps them onto the entry model so `nanopedia build`
times the same text that Hugo and MkDocs are timed on. Every generated entry passes `check`.
"""

from __future__ import annotations

import argparse
import json
import zlib
from pathlib import Path
from typing import Any, get_args

import yaml

from nanopedia.model import Category

CATEGORIES = list(get_args(Category))
KINDS = {"arxiv.org": "paper", "/issues/": "issue", "github.com": "source"}


class _Dumper(yaml.CSafeDumper):
    """Block scalars for multi-line text and never an anchor (the loader refuses them)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str)


def _kind(url: str) -> str:
    return next((k for part, k in KINDS.items() if part in url), "docs")


def entry(raw: dict[str, Any]) -> dict[str, Any]:
    """One neutral JSON object as an entry mapping, fields in the documented order."""
    causes = [
        {
            "id": f"cause-{k}",
            "title": s["why"][:200],
            "domain": "workload",
            "action": "investigate",
            "explanation": s["why"],
        }
        for k, s in enumerate(raw["symptoms"], 1)
    ]
    return {
        "id": raw["slug"],
        "title": raw["title"][:120],
        "summary": raw["quick_answer"][:1200],
        "category": CATEGORIES[zlib.crc32(raw["slug"].encode()) % len(CATEGORIES)],
        "tags": raw["tags"],
        "root_causes": causes,
        "symptoms": [
            {"text": s["symptom"], "cause": f"cause-{k}"} for k, s in enumerate(raw["symptoms"], 1)
        ],
        "mechanism": raw["mechanism"],
        "affected_systems": [{"name": s} for s in raw["affected_systems"]],
        "confirm": raw["confirmation_checklist"],
        "fix": [{"title": f["step"], "detail": f["detail"]} for f in raw["fix_steps"]],
        "prevention": [f"Add a CI check: {f['step'].lower()}." for f in raw["fix_steps"]],
        "code_examples": [
            {
                "title": c["title"],
                "stack": "pytorch",
                "language": c["language"],
                "code": c["code"] + "\n",
                "why": raw["quick_answer"],
            }
            for c in raw["code_examples"]
        ],
        "faq": [{"question": q["q"], "answer": q["a"]} for q in raw["faq"]],
        "references": [
            {"title": r["title"], "url": r["url"], "kind": _kind(r["url"])}
            for r in raw["references"]
        ],
        "related": raw["related"],
    }


def convert(jsonl: Path, out: Path) -> int:
    """Write `out/<id>.yaml` for every line plus a `tags.yaml` registering each tag used."""
    out.mkdir(parents=True, exist_ok=True)
    tags: set[str] = set()
    count = 0
    with jsonl.open(encoding="utf-8") as lines:
        for line in lines:
            e = entry(json.loads(line))
            tags.update(e["tags"])
            text = yaml.dump(e, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
            (out / f"{e['id']}.yaml").write_text(text, encoding="utf-8")
            count += 1
    registry = {t: {"title": t, "description": f"Failures involving {t}."} for t in sorted(tags)}
    (out / "tags.yaml").write_text(
        yaml.dump(registry, Dumper=_Dumper, sort_keys=True), encoding="utf-8"
    )
    return count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("jsonl", type=Path)
    ap.add_argument("out", type=Path)
    args = ap.parse_args()
    print(f"wrote {convert(args.jsonl, args.out)} entries to {args.out}")


if __name__ == "__main__":
    main()
