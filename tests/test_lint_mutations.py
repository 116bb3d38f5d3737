"""The lint mutation benchmark's own machinery (bench/lint_mutations.py, bench/lint_releases.py):
its corpus validates and covers what issue 27 asks for, every patch applies to its release (when
the slim copies of the releases are on this machine), edits and line maps are exact, and a
finding counts as found only at an accepted line and only when the release lacks it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fixtures.bench import load

#: slim copies of the releases (<dist>-<version>/ with the .py files and the dist-info)
#: the slim release copies (bench/_releases.py keeps them in ~/.cache/attn-contracts/releases);
#: the patch check runs only where this names them
RELEASES = Path(os.environ.get("ATTN_CONTRACTS_RELEASES", "/nonexistent"))


lm = load("lint_mutations")
lr = load("lint_releases")


def test_the_corpus_covers_the_issue() -> None:
    entries = [m for _, m in lm.load_corpus()]
    bugs = [m for m in entries if m.expect != "clean"]
    clean = [m for m in entries if m.expect == "clean"]
    assert len(bugs) >= 40 and len(clean) >= 10
    releases = {m.release for m in bugs}
    assert {"vllm==0.33.0", "sglang==0.5.23", "vllm==0.25.0"} <= releases
    # the seed's bug, both forms, on vLLM 0.25.0
    assert {"v25-revert-47079", "v25-revert-47079-literal"} <= {m.id for m in bugs}
    used = {m.shape for m in entries}
    assert set(lm.SHAPES) <= used, set(lm.SHAPES) - used


def _have_releases() -> bool:
    return all((RELEASES / r.folder / r.package).is_dir()
               for r in {lm.parse_spec(m.release) for _, m in lm.load_corpus()})


@pytest.mark.skipif(not _have_releases(), reason=f"no slim release copies under {RELEASES}")
def test_every_patch_applies_to_its_release(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--check-patches", "--no-download", "--sources", str(RELEASES), "--cache",
            str(tmp_path)]
    assert lm.main(argv) == 0, capsys.readouterr().out


@pytest.mark.skipif(not (RELEASES / "vllm-0.34.0" / "vllm").is_dir(),
                    reason=f"no vLLM 0.34.0 sources under {RELEASES}")
def test_dashs_merge_is_an_edge_the_lint_checks(tmp_path: Path) -> None:
    """vLLM 0.34's DASH attention weighs FlashAttention's or FlashInfer's LSE with a softmax
    (base e): released, clean (FlashInfer is asked for lse_base='ln'); with that keyword dropped,
    an error at the softmax; its refactor through a kwargs dict, clean (issue 36 item 4)."""
    import json

    out = tmp_path / "dash.json"
    argv = ["--only", "v34-dash*", "--no-download", "--sources", str(RELEASES), "--cache",
            str(tmp_path), "--quiet", "--json", str(out)]
    assert lm.main(argv) == 0
    report = json.loads(out.read_text())
    assert not [s for r in report["releases"] for s in r["baseline"]
                if s["path"].endswith("dash_attention.py")]
    status = {m["id"]: m["status"] for m in report["mutations"]}
    assert status == {"v34-dash-lse-base-dropped": "error",
                      "v34-dash-lse-base-dropped-fix": "clean"}, status


def test_a_missing_release_is_one_line_and_exit_2(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--check-patches", "--no-download", "--sources", str(tmp_path), "--cache",
            str(tmp_path), "--only", "v33-fimla-flip"]
    assert lm.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "vllm-0.33.0" in err


def test_an_unknown_id_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert lm.main(["--check-patches", "--only", "no-such-mutation"]) == 2
    assert "no-such-mutation" in capsys.readouterr().err


def _edit(line: int, old: str, new: str) -> object:
    return lm.Edit(file="pkg/a.py", line=line, old=old, new=new)


def test_an_edit_must_find_its_old_text_at_its_line() -> None:
    text = "a\nb\nc\n"
    assert lm.apply_edits(text, [_edit(2, "b\n", "B\nB2\n")], "a.py") == "a\nB\nB2\nc\n"
    assert lm.apply_edits(text, [_edit(2, "", "x\n")], "a.py") == "a\nx\nb\nc\n"
    with pytest.raises(lm.PatchError):
        lm.apply_edits(text, [_edit(1, "b\n", "B\n")], "a.py")  # b is on line 2
    with pytest.raises(lm.PatchError):
        lm.apply_edits(text, [_edit(1, "a\nb\n", "x\n"), _edit(2, "b\n", "y\n")], "a.py")


def test_edits_replace_whole_lines_and_change_something() -> None:
    with pytest.raises(ValueError):
        _edit(1, "a", "b\n")
    with pytest.raises(ValueError):
        _edit(1, "a\n", "a\n")


def test_line_map_follows_inserted_and_deleted_lines() -> None:
    before = "a\nb\nc\nd\n"
    after = "a\nnew\nb\nd\n"
    assert lm.line_map(before, after) == {1: 1, 2: 3, 4: 4}


def _seen(line: int, code: str = "AC003", severity: str = "error", message: str = "m",
          path: str = "pkg/a.py") -> object:
    return lm.Seen(path, line, code, severity, message)


def _mutation(expect: str, at: list[str]) -> object:
    return lm.Mutation(id="m", release="vllm==0.33.0", shape="flip-declaration",
                       description="d", expect=expect, at=at, truth="t",
                       edit=[_edit(1, "a\n", "b\n")])


def test_found_only_at_an_accepted_line_and_only_when_new() -> None:
    texts = {"pkg/a.py": ("a\nb\nc\n", "x\na\nb\nc\n")}  # one line inserted on top
    m = _mutation("error", ["pkg/a.py:3"])
    # the release's finding on line 2 moved to line 3: the same finding, not a hit
    status, matched, _ = lm.judge(m, [_seen(2)], [_seen(3)], texts)
    assert (status, matched) == ("missed", [])
    # another message at the accepted line: the mutation's own finding
    status, matched, _ = lm.judge(m, [_seen(2)], [_seen(3), _seen(3, message="other")], texts)
    assert status == "error" and [s.message for s in matched] == ["other"]
    # a warning there is found as "any", not as an error; one elsewhere is not found
    assert lm.judge(m, [], [_seen(3, severity="warning")], texts)[0] == "warning"
    assert lm.judge(m, [], [_seen(4)], texts)[0] == "missed"
    # notes never count
    assert lm.judge(m, [], [_seen(3, severity="note")], texts)[0] == "missed"


def test_an_accepted_line_stands_for_its_logical_line() -> None:
    """A call written over several physical lines is one logical line (Python's own unit):
    a report at the call's first line and one at its keyword's line name the same statement,
    whichever of the two the corpus lists; the next statement is another."""
    mutated = "x = 1\nout = combine(\n    a,\n    base=b,\n)\ny = 2\n"
    texts = {"pkg/a.py": ("x = 1\n", mutated)}
    for at, hit in (("pkg/a.py:4", 2), ("pkg/a.py:2", 4)):
        m = _mutation("error", [at])
        assert lm.judge(m, [], [_seen(hit)], texts)[0] == "error"
        assert lm.judge(m, [], [_seen(6)], texts)[0] == "missed"
        assert lm.judge(m, [], [_seen(1)], texts)[0] == "missed"
    assert lm.logical_lines("def f(:\n") == {}  # not Python: each line is its own


def test_a_clean_refactor_is_flagged_by_any_new_warning() -> None:
    texts = {"pkg/a.py": ("a\nb\n", "a\nb2\n")}
    m = _mutation("clean", [])
    assert lm.judge(m, [_seen(1)], [_seen(1)], texts)[0] == "clean"
    assert lm.judge(m, [_seen(1)], [], texts)[0] == "clean"  # a fix removes a finding
    assert lm.judge(m, [], [_seen(2, severity="warning")], texts)[0] == "flagged"
    assert lm.judge(m, [], [_seen(2, severity="note")], texts)[0] == "clean"
    # a finding the release has word for word elsewhere in the file moved with its code
    assert lm.judge(m, [_seen(1)], [_seen(2)], texts)[0] == "clean"


def test_a_bug_is_paired_with_its_fix_by_either_naming() -> None:
    """``<id>-fix`` and, for a bug named ``<stem>-bug``, ``<stem>-fix``: a corpus that names its
    bugs so was reported as having no pairs at all."""
    assert lm.fix_id("h13-v34-x") == "h13-v34-x-fix"
    assert lm.fix_id("h14-v34-x-bug") == "h14-v34-x-fix"


def test_a_bug_that_removes_a_finding_it_did_not_edit_breaks_monotonicity() -> None:
    texts = {"pkg/a.py": ("a\nb\nc\n", "x\na\nb\nc2\n")}  # a line on top, line 3 edited
    # the finding of line 2 (now 3) is gone: lost; the one of the edited line 3 is not counted
    assert lm.lost([_seen(2), _seen(3)], [], texts) == [_seen(3)]
    # still there at its moved line, or word for word elsewhere in its file: not lost
    assert lm.lost([_seen(2)], [_seen(3)], texts) == []
    assert lm.lost([_seen(2)], [_seen(1)], texts) == []
    # a weaker finding in its place is a loss; a note never counts
    assert lm.lost([_seen(2)], [_seen(3, severity="warning", message="w")], texts) == [_seen(3)]
    assert lm.lost([_seen(2, severity="note")], [], texts) == []
    # a warning made an error at its line (a base not read, that the bug made wrong) is kept
    assert lm.lost([_seen(2, severity="warning", message="w")],
                   [_seen(3, code="AC023", message="e")], texts) == []
    # a file the edit did not touch keeps its lines
    assert lm.lost([_seen(5, path="pkg/b.py")], [], texts) == [_seen(5, path="pkg/b.py")]


def test_a_clean_refactor_names_no_location() -> None:
    with pytest.raises(ValueError):
        _mutation("clean", ["pkg/a.py:1"])
    with pytest.raises(ValueError):
        _mutation("error", [])


def test_classification_matches_by_path_code_subject_line_and_release() -> None:
    entry = lr.Entry.model_validate({
        "path": "v1/attention/backends/*.py", "code": "AC003", "subject": "cp_lse_ag_out_rs",
        "contains": "is_lse_base_on_e=False", "releases": "vllm>=0.25,<0.33", "class": "hazard",
        "why": "w"})
    finding = {"rel": "v1/attention/backends/flashinfer.py", "code": "AC003",
               "subject": "cp_lse_ag_out_rs"}
    line = "    partial(cp_lse_ag_out_rs, is_lse_base_on_e=False)"
    v25, v33 = lr.parse_spec("vllm==0.25.0"), lr.parse_spec("vllm==0.33.0")
    assert entry.matches(v25, finding, line)
    assert not entry.matches(v33, finding, line)  # outside the range
    assert not entry.matches(lr.parse_spec("sglang==0.5.23"), finding, line)
    assert not entry.matches(v25, finding, line.replace("False", "True"))
    assert not entry.matches(v25, {**finding, "code": "AC021"}, line)
    with pytest.raises(ValueError):
        lr.Entry.model_validate({"path": "x", "code": "AC003", "releases": "vllm>=zero",
                                 "class": "real", "why": "w"})


def test_a_known_defect_is_reported_only_by_an_error_at_its_line(tmp_path: Path) -> None:
    root = tmp_path / "sglang-0.5.23"
    (root / "sglang" / "srt").mkdir(parents=True)
    (root / "sglang" / "srt" / "m.py").write_text(
        "# merge_state(a, b) in a comment is not the call\nx = 1\n    merge_state(a, b)\n")
    cls = lr.Classification.model_validate({"finding": [], "expected": [{
        "path": "srt/m.py", "releases": "sglang>=0.5.20", "contains": "merge_state(",
        "class": "real", "why": "w"}]})
    release = lr.parse_spec("sglang==0.5.23")

    def status(findings: list[dict[str, object]], spec: str = "sglang==0.5.23") -> list[str]:
        run = lr.Run(lr.parse_spec(spec), 1, 3, 0.0, 0.0, 0.0, 0, findings)
        return [s for _, _, s in lr.known_defects([run], {spec: root}, cls)]

    at = {"rel": "srt/m.py", "line": 3, "code": "AC023", "severity": "error"}
    assert status([at]) == ["error at line 3 (AC023)"]
    assert status([{**at, "severity": "warning"}]) == ["**missed** (line 3)"]
    assert status([{**at, "line": 1}]) == ["**missed** (line 3)"]  # the comment line
    assert status([at], "sglang==0.5.10") == []  # outside the releases it names
    assert release.package == "sglang"
