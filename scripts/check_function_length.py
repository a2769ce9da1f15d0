#!/usr/bin/python3
"""No function outside the tests is longer than --limit lines (80 by default: STYLE.md, habit 12).

Reads every .cpp, .hpp and .cu file under src/ and include/ of ROOT. A function's length runs
from the first line of its signature to its closing brace, both included. The count reads the
project's layout, not C++: a function body opens with a line that starts at column 0, ends with
'{' and has a '(' on it or on one of the three lines above (namespaces, structs, classes,
enums, unions and extern blocks do not count); its signature starts at the first of the
unindented lines just above that are not comments, preprocessor lines or the end of something
else (';', '{' or '}'); it ends at the next line that starts with '}' at column 0. Functions in
namespaces are written unindented here, so they are counted too; a lambda or a member function
defined inside a class is part of what encloses it.

Prints each function over the limit (its length, file:line and the signature's first line), the
longest first, and exits 1 when there is any, 0 otherwise.
"""
import argparse
import pathlib
import re
import sys

# Opening lines that start a block which is not a function body.
NOT_A_FUNCTION = re.compile(r'(namespace|struct|class|enum|union|extern|template\s*<[^>]*>\s*(struct|class))\b')


def source_files(root):
    patterns = ['src/**/*.cpp', 'src/**/*.hpp', 'include/**/*.hpp', 'src/**/*.cu']
    return sorted(p for pattern in patterns for p in root.glob(pattern))


def opens_function(lines, i):
    """Whether line i opens a function body: unindented, ends with '{', a '(' on it or just above."""
    line = lines[i]
    return (line and not line[0].isspace() and line.rstrip().endswith('{') and not NOT_A_FUNCTION.match(line)
            and '(' in ''.join(lines[max(0, i - 3):i + 1]) and not line.startswith('#'))


def signature_start(lines, i):
    """The first line of the signature whose body opens at line i (a signature may wrap)."""
    s = i
    while (s > 0 and lines[s - 1] and not lines[s - 1][0].isspace()
           and not lines[s - 1].rstrip().endswith((';', '}', '{')) and not lines[s - 1].startswith(('//', '#'))):
        s -= 1
    return s


def function_lengths(path):
    """(length, first line number, first line) of every function in the file."""
    lines = path.read_text(errors='replace').split('\n')
    start = None
    for i, line in enumerate(lines):
        if start is None:
            if opens_function(lines, i):
                start = signature_start(lines, i)
        elif line.startswith('}'):
            yield i - start + 1, start + 1, lines[start]
            start = None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('root', type=pathlib.Path, help='the repository root (holds src/ and include/)')
    parser.add_argument('--limit', type=int, default=80, help='the most lines a function may have (default 80)')
    args = parser.parse_args()
    files = source_files(args.root)
    if not files:
        print(f'error: no source files under {args.root}/src or {args.root}/include', file=sys.stderr)
        return 2
    over = []
    for path in files:
        for length, line_no, first in function_lengths(path):
            if length > args.limit:
                over.append((length, f'{path.relative_to(args.root)}:{line_no}', first[:90]))
    for length, where, first in sorted(over, reverse=True):
        print(length, where, first)
    print(f'{len(over)} functions over {args.limit} lines in {len(files)} files')
    return 1 if over else 0


if __name__ == '__main__':
    sys.exit(main())
