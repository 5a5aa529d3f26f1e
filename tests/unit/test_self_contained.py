"""The repository stands alone: no file of it reads, imports, links or documents a path
outside its root, and the docs speak of the project, not of its tracker's numbers."""

import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: Folders beside a developer's checkout that no user has (spelled in two pieces, so
#: that this file does not name them).
OUTSIDE = ("../" + "shared", "/work" + "/", "peers" + "-data")
#: `Path(__file__).parents[N]` (or `.resolve().parents[N]`): N levels up from the file.
PARENTS = re.compile(r"Path\(__file__\)(?:\.resolve\(\))?\.parents\[(\d+)\]")
#: Tracker numbers in prose: "issue 9", "issues 3 and 4", "(#12)".
ISSUE_NUMBER = re.compile(r"\bissues? ?#?\d+|\(#\d+\)", re.IGNORECASE)


def tracked_files() -> list[pathlib.Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False
    ).stdout
    if not listed:
        pytest.fail("git ls-files listed nothing: this test needs the git checkout")
    return [ROOT / name for name in listed.decode().split("\0") if name]


def text_of(path: pathlib.Path) -> str | None:
    try:
        return path.read_text()
    except (UnicodeDecodeError, FileNotFoundError):
        return None


def test_no_file_names_a_folder_beside_the_checkout():
    offenders = []
    for path in tracked_files():
        text = text_of(path)
        if text is None:
            continue
        offenders += [f"{path.relative_to(ROOT)}: {needle}" for needle in OUTSIDE if needle in text]
    assert offenders == []


def test_no_python_file_climbs_above_the_repository():
    offenders = []
    for path in tracked_files():
        if path.suffix != ".py" or path == pathlib.Path(__file__).resolve():
            continue  # this file spells the patterns it looks for
        depth = len(path.relative_to(ROOT).parts) - 1  # parents[depth] is the root
        text = text_of(path) or ""
        for match in PARENTS.finditer(text):
            if int(match.group(1)) > depth:
                offenders.append(f"{path.relative_to(ROOT)}: {match.group(0)}")
        if re.search(r"\bROOT\.parent\b", text):
            offenders.append(f"{path.relative_to(ROOT)}: ROOT.parent")
    assert offenders == []


def test_docs_speak_of_the_project_not_of_issue_numbers():
    offenders = []
    for path in tracked_files():
        relative = path.relative_to(ROOT)
        if path.suffix != ".md" and relative.parts[0] != "bench":
            continue
        for number, line in enumerate((text_of(path) or "").splitlines(), 1):
            if ISSUE_NUMBER.search(line):
                offenders.append(f"{relative}:{number}: {line.strip()}")
    assert offenders == []


def test_the_checks_catch_what_they_look_for(tmp_path):
    assert PARENTS.search('ROOT = pathlib.Path(__file__).resolve().parents[3] / "x"')
    assert ISSUE_NUMBER.search("the fleet benchmark (issue 9)")
    assert not ISSUE_NUMBER.search("tissue 9 of the body")
