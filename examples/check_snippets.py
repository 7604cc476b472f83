#!/usr/bin/env python3
"""The C++ shown in the documentation is the C++ the tests compile and run.

A region of a file under examples/, between the lines `// begin-snippet: NAME` and
`// end-snippet` (`#` for CMake files), is shown in a Markdown file as a fenced block right after
the line `<!-- snippet: examples/PATH#NAME -->`. This check fails when a shown block differs from its
region (indentation of the region aside), names a region that does not exist, when a region is
shown nowhere, or when README.md or any page under docs/ has a ```cpp block without a marker:
every C++ block of the documentation is part of an example program the build compiles (and
CTest runs those that need no server of their own).

Usage: check_snippets.py SOURCE_DIR
"""
import difflib
import pathlib
import re
import sys
import textwrap

BEGIN = re.compile(r"^\s*(?://|#) begin-snippet: ([\w-]+)\s*$")
END = re.compile(r"^\s*(?://|#) end-snippet\s*$")
MARKER = re.compile(r"^<!-- snippet: (examples/[\w./-]+)#([\w-]+) -->\s*$")


def regions(path):
    """NAME -> text of each region of one source file (dedented)."""
    found, name, lines = {}, None, []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if m := BEGIN.match(line):
            if name:
                raise SystemExit(f"{path}:{n}: snippet '{m[1]}' begins inside '{name}'")
            name, lines = m[1], []
        elif END.match(line):
            if not name:
                raise SystemExit(f"{path}:{n}: end-snippet without a begin")
            if name in found:
                raise SystemExit(f"{path}:{n}: snippet '{name}' defined twice")
            found[name] = textwrap.dedent("\n".join(lines)).strip("\n")
            name = None
        elif name:
            lines.append(line)
    if name:
        raise SystemExit(f"{path}: snippet '{name}' has no end-snippet")
    return found


def shown_blocks(md):
    """(line, marker or None, language, text) of each fenced block of a Markdown file."""
    lines = md.read_text().splitlines()
    out, i = [], 0
    while i < len(lines):
        if (fence := re.match(r"^```(\w*)\s*$", lines[i])):
            start = i
            marker = MARKER.match(lines[i - 1]) if i > 0 else None
            i += 1
            body = []
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            out.append((start + 1, marker, fence[1], "\n".join(body).strip("\n")))
        i += 1
    return out


def main():
    src = pathlib.Path(sys.argv[1])
    snippets = {}
    for f in sorted((src / "examples").rglob("*")):
        if f.suffix in (".cpp", ".txt") and f.is_file():
            for name, text in regions(f).items():
                snippets[(f.relative_to(src).as_posix(), name)] = text
    pages = [src / "README.md"] + sorted((src / "docs").rglob("*.md"))
    errors, used, checked = [], set(), 0
    for md in pages:
        rel = md.relative_to(src)
        for line, marker, lang, body in shown_blocks(md):
            if not marker:
                if lang in ("cpp", "c++", "cxx", "cc", "hpp"):
                    errors.append(f"{rel}:{line}: a ```cpp block that is no example "
                                  "(put it in examples/ and mark it <!-- snippet: ... -->)")
                continue
            key = (marker[1], marker[2])
            if key not in snippets:
                errors.append(f"{rel}:{line}: no snippet '{key[1]}' in {key[0]}")
                continue
            used.add(key)
            checked += 1
            if body != snippets[key]:
                diff = difflib.unified_diff(snippets[key].splitlines(), body.splitlines(),
                                            f"{key[0]}#{key[1]}", f"{rel}:{line}", lineterm="")
                errors.append("\n".join(diff))
    for key in sorted(set(snippets) - used):
        errors.append(f"{key[0]}: snippet '{key[1]}' is shown in no page")
    for e in errors:
        print("FAIL:", e)
    if errors:
        return 1
    print(f"ok: {checked} blocks in the docs match their examples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
