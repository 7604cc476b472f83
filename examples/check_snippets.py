#!/usr/bin/env python3
"""The C++ shown in the documentation is the C++ the tests compile and run.

A region of a file under examples/, between the lines `// begin-snippet: NAME` and
`// end-snippet` (`#` for CMake files), is shown in a Markdown file as a fenced block right after
the line `<!-- snippet: examples/PATH#NAME -->`. This check fails when a shown block differs from its
region (indentation of the region aside), names a region that does not exist, when a region is
shown nowhere, or when README.md or any page under docs/ has a ```cpp block without a marker:
every C++ block of the documentation is part of an example program the build compiles (and
CTest runs those that need no server of their own). Fences indented inside a list item count too.

It also fails when a relative link of those pages names a file that does not exist, or a
`#anchor` that no heading of the linked page (or of the page itself) produces, so moving a
section cannot silently break a link into it.

Usage: check_snippets.py SOURCE_DIR
"""
import difflib
import pathlib
import re
import sys
import textwrap

BEGIN = re.compile(r"^\s*(?://|#) begin-snippet: ([\w-]+)\s*$")
END = re.compile(r"^\s*(?://|#) end-snippet\s*$")
MARKER = re.compile(r"^\s*<!-- snippet: (examples/[\w./-]+)#([\w-]+) -->\s*$")
FENCE = re.compile(r"^\s*```([\w+-]*)\s*$")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$")


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
        if (fence := FENCE.match(lines[i])):
            start = i
            marker = MARKER.match(lines[i - 1]) if i > 0 else None
            i += 1
            body = []
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            text = textwrap.dedent("\n".join(body)).strip("\n")
            out.append((start + 1, marker, fence[1].lower(), text))
        i += 1
    return out


def prose_lines(md):
    """(line number, text) of each line of a Markdown file outside fenced blocks."""
    fenced = False
    for n, line in enumerate(md.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            yield n, line


def anchors(md):
    """The anchors GitHub gives the headings of a page (lower case, punctuation dropped,
    spaces as hyphens, -1, -2, ... for repeats)."""
    found, seen = set(), {}
    for _, line in prose_lines(md):
        if m := HEADING.match(line):
            slug = re.sub(r"[^\w\- ]", "", m[1].lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def broken_links(src, pages):
    """Relative links of the pages whose file or heading does not exist."""
    errors, cache = [], {}
    for md in pages:
        lines = dict(prose_lines(md))  # a link's text may span lines: search the whole page
        prose = "\n".join(lines.get(n, "") for n in range(1, max(lines, default=0) + 1))
        for m in LINK.finditer(prose):
            target = m[1]
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # http:, mailto:, ...
            n = prose.count("\n", 0, m.start()) + 1
            path, _, anchor = target.partition("#")
            linked = (md.parent / path).resolve() if path else md.resolve()
            where = f"{md.relative_to(src)}:{n}: link {target}"
            if not linked.exists():
                errors.append(f"{where}: no such file")
            elif anchor and linked.suffix == ".md":
                if linked not in cache:
                    cache[linked] = anchors(linked)
                if anchor not in cache[linked]:
                    errors.append(f"{where}: no heading makes #{anchor}")
    return errors


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
                if lang in ("cpp", "c++", "cxx", "cc", "hpp", "h"):
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
    errors += broken_links(src, pages)
    for e in errors:
        print("FAIL:", e)
    if errors:
        return 1
    print(f"ok: {checked} blocks in the docs match their examples; "
          f"the relative links of {len(pages)} pages resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
