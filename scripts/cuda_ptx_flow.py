#!/usr/bin/python3
"""Whether a change to the CUDA kernels left their float arithmetic as it was, without a GPU.

    scripts/cuda_ptx_flow.py [--base REV] [--arch 80,90]

Compiles src/engine/attention/cuda/flash_cuda.cu as it is at git revision REV (default HEAD)
and as it is in the working tree to PTX with nvcc (one PTX per architecture), and compares each
kernel's floating-point dataflow: every instruction that reads or writes a float register, in
program order, with addresses, integer registers and labels blanked and float registers renamed
by where they are first used in arithmetic. A run of register moves (the allocator's phi copies)
is compared as what it leaves in each register. The same dataflow means the same float
operations on the same values in the same order: the same bits on any GPU, as far as PTX decides
them (ptxas does not reassociate float arithmetic).

Kernels are matched by name and template arguments; a kernel with a template argument `false`
(`Lb0E`: e.g. the kernels' "no score modifier" instantiation) is matched with the base's kernel
without it, and parameters added to a kernel do not count. Kernels found in only one of the two
are listed. Exits 0 when every kernel of the base has its match with the same dataflow, 1
otherwise, 2 when nvcc or git fails.
"""
import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
KERNEL = 'src/engine/attention/cuda/flash_cuda.cu'
FLOAT_REG = r'%(?:f|h|hh)\d+'
MOVE = re.compile(r'mov\.f32\s+(' + FLOAT_REG + r'),\s*(' + FLOAT_REG + r'|0f[0-9A-F]+);$')


def compile_ptx(source_dir, arch, out):
    nvcc = os.environ.get('NVCC', '/usr/local/cuda/bin/nvcc')
    cmd = [nvcc, '-O3', '-std=c++17', f'-arch=sm_{arch}', f'-I{source_dir}/include',
           f'-I{source_dir}/src/engine/attention/cuda', '-ptx', f'{source_dir}/{KERNEL}', '-o', str(out)]
    subprocess.run(cmd, check=True)
    return out.read_text()


def kernel_key(mangled):
    """The kernel's name and template arguments from its mangled name (the name is the identifier
    after its length that ends in _kernel; the namespace hash and the parameters are left out),
    without `false` template arguments."""
    for m in re.finditer(r'(?=(\d+))', mangled):
        digits = m.group(1)
        for cut in range(len(digits)):  # "...ee917flash..." : the length is a suffix of the digit run
            n, at = int(digits[cut:]), m.start() + len(digits)
            name = mangled[at:at + n]
            if name.endswith('_kernel') and mangled[at + n:at + n + 1] == 'I':
                args = re.match(r'I(.*?E)Ev', mangled[at + n:])
                return name + '<' + (args.group(1) if args else '?').replace('Lb0E', '') + '>'
    return mangled


def kernels(ptx):
    """{key: body} of every .entry; key = the kernel's name and template arguments."""
    found = {}
    for part in re.split(r'\n(?=(?:\.visible )?\.entry )', ptx)[1:]:
        mangled = re.match(r'(?:\.visible )?\.entry (\S+)\(', part).group(1)
        found[kernel_key(mangled)] = part
    return found


def float_lines(body):
    lines = []
    for line in body.splitlines():
        line = line.strip()
        if not line or line.startswith(('//', '.', '$', '{', '}')):
            continue
        predicate = ''
        if line.startswith('@'):
            predicate, line = '@P ', line.split(None, 1)[1]
        if not re.search(FLOAT_REG, line) and not line.startswith(('mma', 'bar')):
            continue
        line = re.sub(r'\[[^\]]*\]', '[A]', line)
        line = re.sub(r'%(?:r|rd|p|rs)\d+', '%X', line)
        lines.append(predicate + line)
    return lines


def dataflow(body):
    lines = float_lines(body)
    names = {}
    for line in lines:  # names from the arithmetic, where the order is the program's
        if not MOVE.match(line):
            for r in re.findall(FLOAT_REG, line):
                names.setdefault(r, f'F{len(names)}')
    for line in lines:  # registers that only ever hold a constant are named by it
        m = MOVE.match(line)
        if m and m.group(1) not in names and m.group(2).startswith('0f'):
            names[m.group(1)] = 'C' + m.group(2)
    for line in lines:
        for r in re.findall(FLOAT_REG, line):
            names.setdefault(r, f'F{len(names)}')
    flow, run = [], []

    def moves():
        value = {}
        for d, s in run:  # in order: a copy of a register written earlier in the run copies its value
            value[d] = value.get(s, s)
        return ('moves', tuple(sorted(value.items())))

    for line in lines:
        m = MOVE.match(line)
        if m:
            run.append((names[m.group(1)], names.get(m.group(2), m.group(2))))
            continue
        renamed = re.sub(FLOAT_REG, lambda r: names[r.group(0)], line)
        if run:
            flow.append(moves())
            run = []
        flow.append(renamed)
    if run:
        flow.append(moves())
    return flow


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--base', default='HEAD', help='the git revision to compare with (default HEAD)')
    parser.add_argument('--arch', default='80,90', help='compute capabilities to compile for (default 80,90)')
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        base_tree = tmp / 'base'
        try:
            base_tree.mkdir()
            archive = subprocess.run(['git', '-C', str(ROOT), 'archive', args.base, 'include', 'src/engine/attention/cuda'],
                                     check=True, capture_output=True).stdout
            subprocess.run(['tar', '-x', '-C', str(base_tree)], input=archive, check=True)
            for arch in args.arch.split(','):
                base = kernels(compile_ptx(base_tree, arch, tmp / f'base{arch}.ptx'))
                new = kernels(compile_ptx(ROOT, arch, tmp / f'new{arch}.ptx'))
                for key in sorted(set(base) | set(new)):
                    if key not in new:
                        print(f'sm_{arch} MISSING  {key} (in {args.base} only)')
                        ok = False
                    elif key not in base:
                        print(f'sm_{arch} new      {key}')
                    else:
                        same = dataflow(base[key]) == dataflow(new[key])
                        ok = ok and same
                        print(f'sm_{arch} {"same" if same else "CHANGED":8} {key}')
        except subprocess.CalledProcessError as e:
            print(f'error: {" ".join(map(str, e.cmd))[:200]} failed', file=sys.stderr)
            return 2
    print('float dataflow: ' + ('unchanged' if ok else 'CHANGED'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
