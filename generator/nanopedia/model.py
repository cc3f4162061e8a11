"""The entry model: the single source of truth for the entry format and its JSON Schema.

Pages, search, diagnosis and the MkDocs plugin all read these frozen models; nothing downstream
re-parses YAML. Field docstrings become the JSON Schema descriptions editors show on hover.
Fields marked "markdown" are rendered with the safe renderer in `nanopedia/site/markdown.py`; all
others are plain text. An entry's dates (`Dates`) are no field: they come from the git history of
its file (`nanopedia/incremental/gitdates.py`); their type is here so pages and feeds can take
them without importing the build engine.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

SLUG_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
MAX_ID = 80

Slug = Annotated[str, StringConstraints(pattern=SLUG_PATTERN, max_length=MAX_ID)]
Line = Annotated[str, StringConstraints(min_length=1, max_length=200, strip_whitespace=True)]
Title = Annotated[str, StringConstraints(min_length=3, max_length=120, strip_whitespace=True)]
Inline = Annotated[str, StringConstraints(min_length=1, max_length=600, strip_whitespace=True)]
Markdown = Annotated[str, StringConstraints(min_length=1, max_length=20_000, strip_whitespace=True)]
Code = Annotated[str, StringConstraints(min_length=1, max_length=20_000)]
HttpsUrl = Annotated[str, StringConstraints(pattern=r"^https://[^\s/$.?#][^\s]*$", max_length=500)]
LogLine = Annotated[str, StringConstraints(min_length=1, max_length=2_000)]
Script = Annotated[str, StringConstraints(min_length=1, max_length=8_000)]
Library = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=40)]
Version = Annotated[str, StringConstraints(min_length=1, max_length=40, strip_whitespace=True)]

Category = Literal[
    "mixed-precision",
    "distributed",
    "numerics",
    "memory",
    "performance",
    "configuration",
    "compilation",
    "data",
    "cuda",
    "hardware",
    "autograd",
    "checkpointing",
    "environment",
]
Stack = Literal[
    "pytorch",
    "fsdp1",
    "fsdp2",
    "hf-trainer",
    "accelerate",
    "deepspeed",
    "megatron",
    "lightning",
    "nccl",
    "generic",
]
Language = Literal["python", "yaml", "json", "bash", "shell", "toml", "text"]
RefKind = Literal["docs", "source", "issue", "pull", "paper", "blog"]
Indicates = Literal["decisive", "supporting", "context", "benign"]
Expect = Literal["error", "warning"]
Domain = Literal["workload", "environment", "infrastructure", "scheduler", "data"]
"""Where a cause's fault lives (entries/README.md, "Failure domain and action", says each)."""
Action = Literal[
    "fix-code",
    "fix-config",
    "fix-environment",
    "fix-data",
    "retry",
    "resume-elsewhere",
    "drain-node",
    "reset-gpu",
    "investigate",
]
"""What an automated job-failure hook should do about a cause."""

#: Longest repro script, in lines: a repro shows one failure, not a training run.
MAX_SCRIPT_LINES = 80


class Strict(BaseModel):
    """Base for every model: immutable, unknown fields rejected, docstrings exported."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", use_attribute_docstrings=True, hide_input_in_errors=True
    )


class RootCause(Strict):
    """One documented cause of the failure; symptoms and fingerprints point at it by id."""

    id: Slug
    """Short slug, unique within the entry; becomes the anchor `#cause-<id>` on the page."""
    title: Line
    """The cause in one line, shown in the quick-answer box (`code` spans are shown as code,
    any other markup as typed)."""
    domain: Domain
    """Where the fault lives: `workload` (the training code or its configuration),
    `environment` (installed software, versions, drivers, containers), `infrastructure` (GPU,
    host, network, storage), `scheduler` (time limits, preemption, eviction, node failure),
    `data` (the dataset or input files)."""
    action: Action
    """What a job-failure hook should do: `fix-code`, `fix-config`, `fix-environment`,
    `fix-data`, `retry` (transient), `resume-elsewhere` (restart from the last checkpoint on
    other nodes), `drain-node`, `reset-gpu`, `investigate` (the log cannot decide)."""
    explanation: Markdown
    """Markdown: why this cause produces the failure, with the evidence."""


class Symptom(Strict):
    """Something an engineer actually sees, linked to the cause it points to."""

    text: Inline
    """Markdown (inline): what is seen; quote exact error strings in backticks."""
    cause: Slug
    """Id of the root cause (in `root_causes`) this symptom points to."""


class Range(Strict):
    """Releases of a package that have the failure, as OSV writes them: from `introduced` up
    to, not including, `fixed`."""

    introduced: Version
    """The first affected release (PEP 440, e.g. `2.6.0`); `0` for every release before
    `fixed`."""
    fixed: Version | None = None
    """The first release without the failure; left out while every later release has it."""

    def words(self) -> str:
        """The range as a reader says it: `2.6.0 to before 2.8.0`, `from 2.6.0`, `before 2.8.0`,
        `every release` (the entry page, the MkDocs page and `diagnose` all say it so)."""
        if self.introduced == "0":
            return f"before {self.fixed}" if self.fixed else "every release"
        return (
            f"{self.introduced} to before {self.fixed}" if self.fixed else f"from {self.introduced}"
        )


class AffectedSystem(Strict):
    """A library, framework or hardware generation where the failure occurs."""

    name: Line
    """Markdown (inline): name of the system, e.g. PyTorch FSDP1 (with `MixedPrecision` as
    code) or DeepSpeed ZeRO-3."""
    package: Library | None = None
    """The package whose releases `affected` counts: its PyPI name (`torch`, `deepspeed`), or
    `nccl`, `cuda`, `nvidia-driver`, `slurm`, `python`, `glibc`. None for hardware and for
    systems that are no package."""
    versions: Line | None = None
    """Markdown (inline): affected versions where known, in words, e.g. `>= 2.1, < 2.4`."""
    affected: Annotated[list[Range], Field(max_length=10)] = []
    """The affected releases of `package` as ranges a program can test (required with
    `package`): `diagnose` says whether a version a log shows falls in one."""
    notes: Inline | None = None
    """Markdown (inline): what is specific to this system."""


class FixStep(Strict):
    """One step of the fix: a one-line action plus the detail."""

    title: Line
    """The action in one line, shown in the quick-answer box (`code` spans as code)."""
    causes: Annotated[list[Slug], Field(max_length=20)] = []
    """Ids of the root causes this step fixes; none: it applies to every cause. The diagnosis
    gives the first step of the likely cause."""
    detail: Markdown
    """Markdown: how to do it, per stack where it differs."""


class CodeExample(Strict):
    """A code or configuration snippet for one stack, with why it works."""

    title: Line
    """What the example shows (`code` spans as code)."""
    stack: Stack
    """The stack it applies to."""
    language: Language
    """Language of `code`, used for highlighting; python code must parse."""
    code: Code
    """The code, verbatim."""
    why: Markdown
    """Markdown: why this works (the mechanism it relies on)."""
    runs_on_cpu: bool = False
    """The python code runs on a CPU as it stands (no GPU, no network, no files it does not make):
    `nanopedia verify` then executes it in the repro environment and it must exit 0."""


class Faq(Strict):
    """A question readers of this failure really ask, answered with evidence."""

    question: Line
    """The question (`code` spans as code)."""
    answer: Markdown
    """Markdown: the answer."""


class Reference(Strict):
    """A source that backs the entry's claims."""

    title: Line
    """Title of the page, issue or paper."""
    url: HttpsUrl
    """An https URL."""
    kind: RefKind
    """What kind of source it is."""


class Fingerprint(Strict):
    """A log pattern that recognises this failure, with examples that prove it."""

    id: Slug
    """Slug unique within the entry; diagnosis output names the fingerprint by it."""
    pattern: Annotated[str, StringConstraints(min_length=3, max_length=500)]
    """Regular expression in the portable subset (RE2 and JavaScript agree), matched per line."""
    ignore_case: bool = False
    """Match without regard to case (instead of an inline `(?i)` flag)."""
    indicates: Indicates
    """`decisive`: an exact error string of this failure; `supporting`: a symptom many failures
    share; `context`: a line that tells failures apart (a stack frame, a config echo) but means
    nothing alone, so it counts only next to other evidence of the entry; `benign`: a message
    that is normal in moderation and explained by this entry."""
    collateral: bool = False
    """The line is a consequence of a failure elsewhere (a rank timing out in a collective after a
    peer died): when the log also shows a real failure (decisive or supporting evidence that is
    not collateral), it weighs a tenth and is not taken as the first failure."""
    cause: Slug | None = None
    """Id of the root cause this line points to, when it points to one."""
    overlaps: Annotated[list[Slug], Field(max_length=10)] = []
    """Ids of other entries that own lines this decisive pattern matches too (the same error
    text, told apart by context): `check` refuses an undeclared overlap."""
    must_match: Annotated[list[LogLine], Field(min_length=1, max_length=20)]
    """Log lines the pattern must match (taken from documented error formats)."""
    must_not_match: Annotated[list[LogLine], Field(min_length=1, max_length=20)]
    """Log lines the pattern must not match (near misses, benign variants)."""


class Repro(Strict):
    """A minimal reproduction of the failure and of its fix, run by `nanopedia verify`."""

    id: Slug
    """Slug unique within the entry; `nanopedia verify` names the repro by it."""
    title: Line
    """What the repro shows, in one line (`code` spans as code)."""
    stack: Stack
    """The stack it exercises."""
    ranks: Annotated[int, Field(ge=1, le=2)] = 1
    """Processes to run: 1, or 2 started the way `torchrun --nproc_per_node=2` would (`RANK`,
    `LOCAL_RANK`, `WORLD_SIZE`, `MASTER_ADDR`, `MASTER_PORT` set; use the `gloo` backend)."""
    expect: Expect = "error"
    """How the broken script fails: `error`, it exits non-zero; `warning`, a silent failure that
    only prints the warning its fingerprints name (the exit code is not looked at)."""
    broken: Script
    """A complete Python file (imports included, seeded, CPU-only, at most 80 lines) that
    reproduces the failure."""
    fixed: Script
    """The same program with the entry's fix applied: it must exit 0 and show none of the
    entry's decisive fingerprints, nor those in `shows`."""
    shows: Annotated[list[Slug], Field(max_length=10)] = []
    """Ids of this entry's fingerprints that the broken run's output must match; diagnosing
    that output must then rank this entry first. Required with `expect: warning`."""


class Entry(Strict):
    """One failure write-up: `entries/<id>.yaml`."""

    id: Slug
    """Lower-case slug equal to the file name without `.yaml`; the page is `entries/<id>.html`."""
    title: Title
    """The failure's name as an engineer would search for it."""
    summary: Annotated[
        str, StringConstraints(min_length=20, max_length=1_200, strip_whitespace=True)
    ]
    """Markdown: the quick answer in two to four sentences."""
    category: Category
    """The family the failure belongs to; the home page groups entries by it."""
    tags: Annotated[list[Slug], Field(min_length=1, max_length=12)]
    """Tags from `entries/tags.yaml`."""
    aliases: Annotated[list[Slug], Field(max_length=20)] = []
    """Former ids of this entry; each gets a redirect page."""
    root_causes: Annotated[list[RootCause], Field(min_length=1, max_length=20)]
    """The documented causes."""
    symptoms: Annotated[list[Symptom], Field(min_length=1, max_length=40)]
    """What engineers see, each pointing to a root cause."""
    mechanism: Markdown
    """Markdown: how the failure happens, step by step."""
    affected_systems: Annotated[list[AffectedSystem], Field(min_length=1, max_length=30)]
    """Systems and versions where it occurs."""
    confirm: Annotated[list[Inline], Field(min_length=1, max_length=20)]
    """Markdown (inline) checklist: how to confirm this is your problem."""
    fix: Annotated[list[FixStep], Field(min_length=1, max_length=20)]
    """The fix, as ordered steps."""
    prevention: Annotated[list[Inline], Field(min_length=1, max_length=20)]
    """Markdown (inline) checklist that could go into a CI job."""
    code_examples: Annotated[list[CodeExample], Field(max_length=12)] = []
    """Code per stack."""
    faq: Annotated[list[Faq], Field(max_length=20)] = []
    """Questions readers ask."""
    references: Annotated[list[Reference], Field(min_length=1, max_length=60)]
    """Sources for every technical claim."""
    related: Annotated[list[Slug], Field(max_length=20)] = []
    """Ids of entries a reader would follow next."""
    fingerprints: Annotated[list[Fingerprint], Field(max_length=30)] = []
    """Log patterns for `nanopedia diagnose`."""
    checked_with: Annotated[dict[Library, Version], Field(max_length=12)] = {}
    """The releases the entry's claims were checked against, library to version (e.g.
    `torch: 2.13.0`); shown under the title. `check` warns when it is missing."""
    repro: Annotated[list[Repro], Field(max_length=8)] = []
    """Minimal reproductions of the failure and its fix, run by `nanopedia verify` on a CPU."""
    reviewed: Annotated[str, StringConstraints(pattern=r"^\d{4}-\d{2}-\d{2}$")] | None = None
    """The date (YYYY-MM-DD) a second engineer last checked the entry's claims against its
    sources, as the record `reviews/<id>.md` says (`- Date: ...`); `check` refuses a date
    without such a record, or one that differs from it. The page shows it in the status line."""


class Tag(Strict):
    """One tag of the registry `entries/tags.yaml`."""

    title: Line
    """Display title, e.g. `bf16`."""
    description: Markdown
    """Markdown: what the tag covers, shown on the tag page."""


def entry_json_schema() -> dict[str, Any]:
    """The JSON Schema of an entry file, generated from the model (never written by hand)."""
    schema = Entry.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://nanopedia.invalid/entry.schema.json"
    return schema


class Dates(NamedTuple):
    """The two dates shown on an entry page, in `entries.json` and in the feeds (from git)."""

    first_published: datetime
    """Commit date (UTC) of the first commit on the branch that added the file."""
    last_updated: datetime
    """Commit date (UTC) of the latest commit on the branch that changed the file."""

    def as_dict(self) -> dict[str, str]:
        """ISO 8601 strings, second precision, `Z` for UTC: what JSON and Atom both want."""
        return {
            "first_published": iso(self.first_published),
            "last_updated": iso(self.last_updated),
        }


def iso(when: datetime) -> str:
    """`2026-01-02T03:04:05Z`: RFC 3339 as Atom requires, sortable as text."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
