#!/usr/bin/env python3
"""Replaces a generated section of a Markdown document with a file's text.

Usage: doc-section.py DOC NAME FILE

The section is everything between the lines `<!-- NAME:begin -->` and `<!-- NAME:end -->`, which stay.
Exits 2, changing nothing, when DOC lacks either marker.
"""
import sys

doc, name, source = sys.argv[1:4]
begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
text = open(doc, encoding="utf-8").read()
if begin not in text or end not in text:
    print(f"doc-section: {doc} has no {begin} ... {end} section", file=sys.stderr)
    sys.exit(2)
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
body = open(source, encoding="utf-8").read()
with open(doc, "w", encoding="utf-8") as out:
    out.write(head + begin + "\n" + body + end + tail)
