#!/usr/bin/python3
"""How much of the tree a reader walks through when following one file's #include "..." lines.

    scripts/include_closure.py src/cli/cmd_demo.cpp [--list]

Prints three numbers for FILE:
  files   the project headers reachable from FILE through #include "..." lines (FILE itself not
          counted; <...> includes are outside the project and not followed);
  climbs  walking those includes depth first, in the order they are written, each header entered
          once, the number of times the next header entered is in a higher layer than the one
          entered just before it (engine < io < lessons < render < cli, docs/architecture.md):
          the reader reached the engine and has to climb back up to read the rest;
  max depth  the longest include chain from FILE.

A quoted include resolves as the compiler's include roots do (CMakeLists.txt's attn_layer): "attn/..."
to include/attn/..., anything else next to the including file, else under src/<layer>/ of the
including file's layer. A header's layer is the folder after include/attn/ or src/.
--list prints the headers in the order they are entered, with their layer and depth; --at-most N
exits 1 when FILE reaches more than N headers (the suite keeps cmd_demo.cpp's door narrow with it).
"""
import argparse
import pathlib
import re
import sys

LAYERS = ['engine', 'io', 'lessons', 'render', 'cli']
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(path, root):
    parts = path.relative_to(root).parts
    if parts[0] == 'include' and len(parts) > 2 and parts[1] == 'attn':
        return parts[2] if parts[2] in LAYERS else None
    if parts[0] == 'src' and len(parts) > 1:
        return parts[1] if parts[1] in LAYERS else None
    return None


def resolve(name, including, root):
    candidates = []
    if name.startswith('attn/'):
        candidates.append(root / 'include' / name)
    candidates.append(including.parent / name)
    layer = layer_of(including, root)
    if layer:
        candidates.append(root / 'src' / layer / name)
    for c in candidates:
        if c.is_file():
            return c.resolve()
    return None  # generated at build time (e.g. the embedded report page) or not in the tree


def includes(path, root):
    found = []
    for line in path.read_text(encoding='utf-8', errors='replace').splitlines():
        m = INCLUDE.match(line)
        if m:
            target = resolve(m.group(1), path, root)
            if target:
                found.append(target)
    return found


def walk(start, root):
    """The headers in the order a depth-first walk enters them: (path, layer, depth)."""
    seen, order = set(), []

    def enter(path, depth):
        for target in includes(path, root):
            if target in seen:
                continue
            seen.add(target)
            order.append((target, layer_of(target, root), depth))
            enter(target, depth + 1)

    sys.setrecursionlimit(10000)
    enter(start.resolve(), 1)
    return order


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('file', type=pathlib.Path)
    parser.add_argument('--root', type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent.parent)
    parser.add_argument('--list', action='store_true', help='every header entered, in order')
    parser.add_argument('--at-most', type=int, help='exit 1 when FILE reaches more headers than this')
    args = parser.parse_args()
    root = args.root.resolve()
    start = (args.file if args.file.is_absolute() else root / args.file).resolve()
    order = walk(start, root)
    rank = {name: i for i, name in enumerate(LAYERS)}
    climbs, previous = 0, layer_of(start, root)
    for path, layer, depth in order:
        if layer in rank and previous in rank and rank[layer] > rank[previous]:
            climbs += 1
            mark = '  <- climb'
        else:
            mark = ''
        if args.list:
            print(f'{"  " * (depth - 1)}{path.relative_to(root)} [{layer}]{mark}')
        previous = layer
    depth = max((d for _, _, d in order), default=0)
    print(f'{args.file}: files {len(order)}, climbs {climbs}, max depth {depth}')
    if args.at_most is not None and len(order) > args.at_most:
        print(f'{args.file} reaches {len(order)} headers, more than {args.at_most}', file=sys.stderr)
        sys.exit(1)


if __name__ == '__main__':
    main()
