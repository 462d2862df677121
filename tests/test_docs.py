"""The README stays a short guide, the documentation's links hold and every flag it names exists: pure Python,
no framework."""

from __future__ import annotations

import argparse
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


# --- every `cpustudy COMMAND ... --flag` the documentation names exists --------------------------------------

# ``cpustudy`` as a program name (not a path, a module or a package extra), then the words after it.
COMMAND = re.compile(r"(?<![\w./\[-])cpustudy\s+([a-z][\w-]*)(.*)")
FLAG = re.compile(r"(?<![\w-])--([A-Za-z][\w-]*)")
# Where a shell command line ends and another program's arguments begin: `|` between spaces (a bare `|`
# is the usage lines' "or", `table|json`), `||`, `&&`, `;`, `$(`, a redirection, a comment.
SHELL_END = re.compile(r"\s\|\|?\s|&&|;|\$\(|\s\d?>|\s#")


def code_texts(text: str) -> list[str]:
    """The code of a markdown file: each inline code span (found per paragraph, as a span may wrap a line; a
    table's escaped ``\\|`` unescaped) and each line of a fenced block, with the lines a trailing backslash
    continues joined."""

    def spans(prose: str) -> list[str]:
        return [m.group(2).replace("\\|", "|") for m in INLINE_CODE.finditer(prose)]

    out: list[str] = []
    paragraph: list[str] = []
    continued, fenced = "", False
    for line in [*text.splitlines(), ""]:
        if FENCE.match(line):
            out += spans(" ".join(paragraph))
            paragraph, continued, fenced = [], "", not fenced
        elif fenced and line.rstrip().endswith("\\"):
            continued += line.rstrip()[:-1] + " "
        elif fenced:
            out.append(continued + line)
            continued = ""
        elif line.strip() and not line.lstrip().startswith("|"):
            paragraph.append(line.strip())
        else:  # a blank line or a table row ends a paragraph; a table row is one of its own
            out += spans(" ".join(paragraph)) + spans(line)
            paragraph = []
    return out


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def flags_of(parser: argparse.ArgumentParser) -> set[str]:
    return {s for action in parser._actions for s in action.option_strings}


def wrong_flags(code: str, parser: argparse.ArgumentParser) -> list[str]:
    """``cpustudy COMMAND [SUBCOMMAND] ... --flag`` in ``code`` (or ``COMMAND --flag``, the program left out)
    whose command has no such option (argparse's abbreviations do not count: the documentation names the whole
    flag), or whose command does not exist."""
    problems = []
    words = code.split()
    if len(words) > 1 and words[0] in subcommands(parser) and (
            words[1].startswith("-") or words[1] in subcommands(subcommands(parser)[words[0]])):
        code = f"cpustudy {code}"  # a command named without the program: `sweep --dry-run`, `cloud plan --vcpus`
    for match in COMMAND.finditer(code):
        name, rest = match.group(1), SHELL_END.split(match.group(2), maxsplit=1)[0]
        commands = subcommands(parser)
        if name not in commands:
            if FLAG.search(rest):
                problems.append(f"`cpustudy {name}`: no such command")
            continue
        command, where = commands[name], f"cpustudy {name}"
        words = rest.split()
        if words and words[0] in subcommands(command):
            command, where = subcommands(command)[words[0]], f"{where} {words[0]}"
        known = flags_of(command)
        problems += [f"`{where} --{flag}`: no such option" for flag in FLAG.findall(rest)
                     if f"--{flag}" not in known]
    return problems


# "`--flag` (`command`, `other`)": a flag attributed to the commands named right after it.
ATTRIBUTED = re.compile(r"`(--[A-Za-z][\w-]*)[^`]*`\s*\(((?:`[a-z][\w -]*`(?:,\s*|\s+(?:and|or)\s+)?)+)\)")


def wrongly_attributed(text: str, parser: argparse.ArgumentParser) -> list[str]:
    """In the prose of ``text``: "`--flag` (`command`, ...)" where a command named has no such option."""
    problems = []
    for match in ATTRIBUTED.finditer(" ".join(prose_lines(text))):
        flag = match.group(1)
        for name in re.findall(r"`([^`]+)`", match.group(2)):
            words = name.removeprefix("cpustudy ").split()
            command = subcommands(parser).get(words[0])
            if command is not None and len(words) > 1:
                command = subcommands(command).get(words[1])
            if command is not None and flag not in flags_of(command):
                problems.append(f"`{flag}` (`{name}`): no such option")
    return problems


@pytest.fixture(scope="module")
def cli_parser() -> argparse.ArgumentParser:
    from cpustudy.cli.main import build_parser

    return build_parser()


def test_flag_check_catches_a_wrong_flag(cli_parser):
    """The check can fail: a flag a command lacks, in a span, in a continued block line or with a command that
    does not exist, is found; the same flags where the command has them, another program's flags after a pipe,
    a package extra and the usage lines' `a|b` are not."""
    text = ("Run `cpustudy recommend mnist_mlp --family gcp:c3-highcpu --deadline 10m`, or\n\n```\n"
            "cpustudy sweep --vcpus 1,2 \\\n    --no-such-flag | grep --count ok\n"
            "cpustudy cloud plan --targets gcp:n2-highcpu-8 --out p --vcpus 1,2 --family x\n"
            "cpustudy bogus --x\n```\n"
            "| `cpustudy compare W --family gcp:c3-highcpu` | `cpustudy results [--format table\\|csv]` |\n"
            "`pip install 'cpustudy[cloud]' --upgrade`, `cpustudy prices [--region R\\|--all-regions]`\n\n"
            "The program left out: `report --format csv`, `sweep --dry-run`, `cloud plan --vcpus 1,2`.\n")
    found = [p for code in code_texts(text) for p in wrong_flags(code, cli_parser)]
    assert found == ["`cpustudy recommend --family`: no such option", "`cpustudy sweep --no-such-flag`: no such option",
                     "`cpustudy cloud plan --family`: no such option", "`cpustudy bogus`: no such command",
                     "`cpustudy report --format`: no such option"]
    assert wrongly_attributed("`--instance-family` (`report`) and `--family` (`compare`,\n`recommend`) override it.",
                              cli_parser) == ["`--family` (`recommend`): no such option"]


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_documented_flags_exist(path: Path, cli_parser):
    text = path.read_text(encoding="utf-8")
    wrong = [p for code in code_texts(text) for p in wrong_flags(code, cli_parser)] + wrongly_attributed(text, cli_parser)
    assert not wrong, f"{path.relative_to(REPO)}: " + "; ".join(dict.fromkeys(wrong))


def test_parser_does_not_import_tensorflow():
    """The flags are checked against the parser `--help` prints, which must never import TensorFlow (seconds)."""
    import subprocess
    import sys

    code = ("import sys; from cpustudy.cli.main import build_parser; build_parser(); "
            "sys.exit('tensorflow' in sys.modules or 'keras' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO).returncode == 0


def test_help_names_the_real_default_family(cli_parser):
    """Local runs are priced as the cloud family that runs their CPU, else the default family
    (`analysis.costs`, `analysis.totarget.price_of`): the help of the options that override it says so, and
    `recommend`, which has none, says how it prices."""
    from cpustudy.prices import DEFAULT_FAMILY

    commands = subcommands(cli_parser)
    texts = [next(a.help for a in commands[c]._actions if flag in a.option_strings)
             for c, flag in (("report", "--instance-family"), ("compare", "--family"))]
    texts.append(commands["recommend"].description)
    for text in texts:
        text = " ".join(str(text).split())
        assert "cloud family that runs" in text and f"none is known or priced, {DEFAULT_FAMILY}" in text, text
