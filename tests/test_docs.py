"""The README stays a short guide and the documentation's links hold: pure Python, no framework."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"
MAX_README_LINES = 200

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# [text](target) and ![alt](target), with an optional "title"
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text (markup removed) lower-cased, punctuation other than
    hyphens and underscores dropped, each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in prose_lines(path.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        slug = github_slug(match.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def link_targets(path: Path) -> list[str]:
    """Every link target in a markdown file, code blocks and code spans left out."""
    targets = []
    for line in prose_lines(path.read_text(encoding="utf-8")):
        definition = REFERENCE_DEFINITION.match(line)
        if definition:
            targets.append(definition.group(1))
            continue
        line = INLINE_CODE.sub("code", line)
        targets.extend(LINK.findall(line))
    return targets


def relative_targets(path: Path) -> list[tuple[str, Path, str]]:
    """(link as written, the file or folder it names, its anchor) for every relative link."""
    out = []
    for target in link_targets(path):
        if SCHEME.match(target) or target.startswith("//"):
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path.resolve()
        out.append((target, resolved, anchor))
    return out


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; move detail to docs/"


def test_slugs_follow_github():
    assert github_slug("Your training script, as it is") == "your-training-script-as-it-is"
    assert github_slug("Tuning: `cpustudy tune`") == "tuning-cpustudy-tune"
    assert github_slug("cpustudy's own overhead") == "cpustudys-own-overhead"
    assert github_slug("Where should I train this model? `compare` and `recommend`") == (
        "where-should-i-train-this-model-compare-and-recommend"
    )


def test_link_parsing_skips_code():
    sample = "see [a](x.md) and `[b](not-a-link.md)`"
    assert LINK.findall(INLINE_CODE.sub("code", sample)) == ["x.md"]


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(path: Path):
    broken = []
    for target, resolved, anchor in relative_targets(path):
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading with the anchor #{anchor}")
    assert not broken, f"{path.relative_to(REPO)}: " + "; ".join(broken)


def test_readme_has_the_ci_test_command():
    ci = [
        line
        for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    command = ci[-1]
    assert "pytest" in command
    assert command in README.read_text(encoding="utf-8").splitlines()


def test_readme_links_every_docs_page():
    pages = sorted(p.resolve() for p in DOCS.iterdir() if p.is_file())
    assert pages, "docs/ is empty"
    linked = {resolved for _, resolved, _ in relative_targets(README)}
    missing = [p.name for p in pages if p not in linked]
    assert not missing, f"README.md does not link to docs/{', docs/'.join(missing)}"
