"""The documentation renders as written: every Markdown table is one block under its
header (a blank line inside one ends it, and its other rows render as plain text), and
README's command table names every command of `inspector --help`."""

import argparse
import pathlib
import re

from inspector import cmd

ROOT = pathlib.Path(__file__).parents[2]
DOCUMENTS = sorted(
    [*ROOT.glob("*.md"), *(ROOT / "docs").glob("*.md"), *(ROOT / "devstack").glob("*.md")]
)
_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def headless_tables(text: str) -> list[int]:
    """The line numbers of the table blocks (runs of `|` lines outside code fences) whose
    second line is not a header separator: a table's rows cut off from their header."""
    found, block, fenced = [], [], False
    for number, line in enumerate([*text.splitlines(), ""], start=1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and line.lstrip().startswith("|"):
            block.append((number, line))
            continue
        if block and (len(block) < 2 or not _SEPARATOR.match(block[1][1])):
            found.append(block[0][0])
        block = []
    return found


def test_the_check_finds_a_table_cut_by_a_blank_line():
    table = "| a | b |\n|---|---|\n| 1 | 2 |\n"
    assert headless_tables(table) == []
    assert headless_tables(table + "\n| 3 | 4 |\n| 5 | 6 |\n") == [5]
    assert headless_tables(f"```\n| not | a table |\n```\n{table}") == []


def test_every_table_has_its_header():
    broken = {
        str(path.relative_to(ROOT)): lines
        for path in DOCUMENTS
        if (lines := headless_tables(path.read_text()))
    }
    assert not broken, f"table rows without a header (a blank line inside a table?): {broken}"


def test_the_readme_command_table_names_every_command():
    parser = cmd._parser()
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    readme = ROOT.joinpath("README.md").read_text()
    table = readme.partition("## The command\n")[2].strip().partition("\n\n")[0]
    missing = [name for name in commands.choices if f"`inspector {name}" not in table]
    assert not missing, f"README's command table leaves out: {missing}"


def test_the_deployment_files_table_names_every_file_of_etc():
    text = ROOT.joinpath("docs", "deployment.md").read_text()
    table = text.partition("| file | installed as | what it is for |")[2].partition("\n\n")[0]
    etc = ROOT / "etc" / "inspector"
    files = sorted(str(p.relative_to(etc)) for p in etc.rglob("*") if p.is_file())
    missing = [name for name in files if f"(../etc/inspector/{name})" not in table]
    assert not missing, f"docs/deployment.md's table of files leaves out: {missing}"
