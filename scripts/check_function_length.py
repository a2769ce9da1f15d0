#!/usr/bin/python3
"""No function outside the tests is longer than --limit lines (80 by default: STYLE.md, habit 12).

Reads every .cpp, .hpp and .cu file under src/ and include/ of ROOT. A function's length runs
from the first line of its signature to its closing brace, both included. The count reads the
project's layout, not C++: a function body opens with a line that starts at column 0, ends with
'{' and has a '(' on it or on one of the three lines above (namespaces, structs, classes,
enums, unions and extern blocks do not count); its signature starts at the first of the
unindented lines just above that are not comments, preprocessor lines or the end of something
else (';', '{' or '}'); it ends at the next line that starts with '}' at column 0. A signature
that wraps so that its '{' ends an indented continuation line counts too: the unindented line
the continuation lines hang from opens it, when it has a '(' and ends in none of ';', '{', '}'.
Functions in
namespaces are written unindented here, so they are counted too; a lambda or a member function
defined inside a class is part of what encloses it.

Prints each function over the limit (its length, file:line and the signature's first line), the
longest first, and exits 1 when there is any outside WAIVED's files, 0 otherwise.
"""
import argparse
import pathlib
import re
import sys

# Files whose long functions are listed but not failed, with why ({path: reason}). Empty: the
# CUDA kernels, once waived because they run only on a GPU, are split into inlined steps, and
# the split was shown to leave their float arithmetic unchanged from the PTX alone
# (scripts/cuda_ptx_flow.py).
WAIVED = {}

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


def hangs_from(lines, i):
    """For an indented line i ending with '{': the unindented line its wrapped signature starts
    on (continuation lines are indented and end in none of ';', '{', '}'), or None."""
    line = lines[i]
    if not line or not line[0].isspace() or not line.rstrip().endswith('{'):
        return None
    j = i - 1
    while j >= 0 and lines[j] and lines[j][0].isspace():
        if lines[j].rstrip().endswith((';', '{', '}')) or lines[j].lstrip().startswith('//'):
            return None
        j -= 1
    if j < 0 or not lines[j] or NOT_A_FUNCTION.match(lines[j]) or lines[j].startswith(('//', '#')):
        return None
    if lines[j].rstrip().endswith((';', '{', '}')) or '(' not in lines[j]:
        return None
    return j


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
            elif (first := hangs_from(lines, i)) is not None:
                start = signature_start(lines, first)
        elif line.startswith('}'):
            yield i - start + 1, start + 1, lines[start]
            start = None


def self_test():
    """The layouts the count must see, each 90 lines long: a one-line signature, a signature
    wrapped onto an indented line that ends with '{', and a template on its own line."""
    import tempfile
    body = ['  x += 1;'] * 88
    cases = {
        'one_line.cpp': ['void f(int x) {'] + body + ['}'],
        'wrapped.cpp': ['void g(int x,', '       int y) {'] + body[1:] + ['}'],
        'template.cpp': ['template <class T>', 'T h(T x,', '    T y) {'] + body[2:] + ['}'],
    }
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        (root / 'src').mkdir()
        failures = 0
        for name, lines in cases.items():
            (root / 'src' / name).write_text('\n'.join(['namespace n {', ''] + lines + ['', '}  // namespace n', '']))
            found = [length for length, _, _ in function_lengths(root / 'src' / name)]
            if found != [90]:
                print(f'FAIL {name}: counted {found}, expected [90]')
                failures += 1
    print('the count sees every layout' if not failures else f'{failures} layouts miscounted')
    return 1 if failures else 0


def main():
    if sys.argv[1:] == ['--self-test']:
        return self_test()
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('root', type=pathlib.Path, help='the repository root (holds src/ and include/)')
    parser.add_argument('--limit', type=int, default=80, help='the most lines a function may have (default 80)')
    args = parser.parse_args()
    files = source_files(args.root)
    if not files:
        print(f'error: no source files under {args.root}/src or {args.root}/include', file=sys.stderr)
        return 2
    over, waived = [], []
    for path in files:
        relative = str(path.relative_to(args.root))
        for length, line_no, first in function_lengths(path):
            if length > args.limit:
                (waived if relative in WAIVED else over).append((length, f'{relative}:{line_no}', first[:90]))
    for length, where, first in sorted(over, reverse=True):
        print(length, where, first)
    for length, where, first in sorted(waived, reverse=True):
        print(f'waived: {length} {where} {first} ({WAIVED[where.split(":")[0]]})')
    print(f'{len(over)} functions over {args.limit} lines in {len(files)} files ({len(waived)} waived)')
    return 1 if over else 0


if __name__ == '__main__':
    sys.exit(main())
