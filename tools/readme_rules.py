"""Write the README's finding-code table from ``attn_contracts.findings.RULES``.

    python tools/readme_rules.py           # rewrite the table between the markers
    python tools/readme_rules.py --check   # exit 1 when the README's table is stale

The table sits between ``<!-- rules:begin -->`` and ``<!-- rules:end -->``; everything else in the
README is left as it is. ``tests/test_findings.py`` runs the check.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from attn_contracts.findings import rules_markdown

README = Path(__file__).resolve().parent.parent / "README.md"
BEGIN, END = "<!-- rules:begin -->", "<!-- rules:end -->"


def with_table(text: str) -> str:
    """``text`` with the table between the markers replaced by the generated one."""
    head, sep, rest = text.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise ValueError(f"README has no {BEGIN} ... {END} section")
    return f"{head}{BEGIN}\n{rules_markdown()}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the table is stale")
    parser.add_argument("--readme", type=Path, default=README)
    args = parser.parse_args(argv)
    text = args.readme.read_text(encoding="utf-8")
    new = with_table(text)
    if args.check:
        if new != text:
            print(f"{args.readme}: the finding-code table is stale; run python "
                  "tools/readme_rules.py", file=sys.stderr)
            return 1
        return 0
    if new != text:
        args.readme.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
