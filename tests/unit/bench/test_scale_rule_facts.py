"""bench/scale.py --code DIR runs the node on DIR's packages: the recorded commit is DIR's when DIR is a git
checkout, and a copy without git is named as code of unknown commit, never passed off as the bench's tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bench import recording, scale


def _commit(tree: Path) -> str:
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    (tree / "mirror").mkdir()
    (tree / "mirror" / "x.py").write_text("X = 1\n")
    subprocess.run(["git", "-C", str(tree), "add", "."], check=True)
    subprocess.run(["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x"],
                   check=True)
    return subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_a_git_checkout_given_as_code_is_the_recorded_commit(tmp_path: Path) -> None:
    commit = _commit(tmp_path / "worktree")
    rows = scale.rule_facts(tmp_path / "worktree")
    assert rows[recording.COMMIT_ROW] == f"`{commit}`"
    assert rows[scale.NODE_CODE_ROW] == f"{tmp_path / 'worktree'} (the commit above)"


def test_a_copy_without_git_is_named_and_the_commit_is_the_benchs(tmp_path: Path) -> None:
    (tmp_path / "archive").mkdir()
    rows = scale.rule_facts(tmp_path / "archive")
    assert rows[recording.COMMIT_ROW] == scale.rule_facts(None)[recording.COMMIT_ROW]
    assert "not a git checkout" in rows[scale.NODE_CODE_ROW]
    assert scale.NODE_CODE_ROW not in scale.rule_facts(None)
