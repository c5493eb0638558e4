#!/usr/bin/env python3
"""Checks that a doc embeds an example file verbatim between
<!-- begin examples/NAME --> ```c ... ``` <!-- end examples/NAME --> markers.

Usage: check_doc_example.py DOC.md SOURCE_ROOT examples/NAME.c
"""
import pathlib
import sys


def main() -> int:
    doc, root, rel = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3]
    text = pathlib.Path(doc).read_text()
    begin = f"<!-- begin {rel} -->\n```c\n"
    end = f"```\n<!-- end {rel} -->"
    if begin not in text or end not in text:
        print(f"{doc}: no embedded {rel} (markers missing)")
        return 1
    embedded = text.split(begin, 1)[1].split(end, 1)[0]
    source = (root / rel).read_text()
    if embedded != source:
        print(f"{doc}: the embedded {rel} differs from the file; paste it again")
        return 1
    print(f"{doc} embeds {rel} verbatim")
    return 0


if __name__ == "__main__":
    sys.exit(main())
