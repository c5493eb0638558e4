#!/usr/bin/env python3
"""Source files stay small (issue 33; docs/ARCHITECTURE.md, "Sizes"): no source file under
core/, backends/, engines/, kernels/ or common/ has more than 600 lines, and no function in one
more than 80.

What it counts:
- files: every .c, .h, .cpp, .hpp, .cu, .hip, .cl and .c.in file; its lines as `wc -l` counts
  them (newlines, comments and blank lines included).
- functions: a small brace-depth scanner over the file with its comments, string and character
  literals and preprocessor lines (continuations included) blanked out. A block is a function
  when its opening brace follows a header (the text since the last `;`, `{` or `}`) that ends
  with `)` (then optionally `const`, `noexcept`, `mutable`, `override` or a `-> type`) or with
  a lambda's capture list (`[&] {`) and is not a control statement (if, for, while, switch, catch): C functions, C++ functions and
  methods, and C++ lambdas (a lambda nested in a function counts on its own and inside its
  function). A function's lines run from the first line of its header to its closing brace.
  `namespace` and `extern "C"` blocks are transparent. Struct, enum and array initializers
  are not functions (their headers end with `=`, a name or `,`). Macros are not functions:
  `ctags --fields=+ne` reports an 88-line GPU_API_TABLE (an X-macro list in
  backends/cuda/vendor_cuda.h) and a 170-line anonymous entry in engines/oneccl/oneccl_bridge.cpp,
  which is its anonymous namespace, not a lambda (its lambdas are the bodies passed to guarded(),
  the longest 42 lines).

Usage: test_source_sizes.py SOURCE_ROOT
"""
import os
import re
import sys

FOLDERS = ('core', 'backends', 'engines', 'kernels', 'common')
SUFFIXES = ('.c', '.h', '.cpp', '.hpp', '.cu', '.hip', '.cl', '.c.in')
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
CONTROL = re.compile(r'^(?:else\s+)?(?:if|for|while|switch|catch)\b')
LAMBDA = re.compile(r'\[[^\[\]]*\]\s*(?:mutable\s*)?$')  # [&] { ... }: a lambda without parameters
TRAILER = re.compile(r'\)\s*(?:(?:const|noexcept|mutable|override)\s*)*(?:->\s*[\w:<>,\s*&]+)?$')


def blank(text):
    """text with comments, string/char literals and preprocessor lines turned into spaces
    (newlines kept, so line numbers hold)."""
    out, i, n = [], 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == '#' or (line_start and c in ' \t' and
                                       text[i:text.find('\n', i) if '\n' in text[i:] else n]
                                       .lstrip().startswith('#')):
            j = i
            while True:  # to the end of the directive, across continuations
                k = text.find('\n', j)
                if k < 0:
                    k = n
                    break
                if text[k - 1] != '\\':
                    break
                j = k + 1
            out.append(re.sub(r'[^\n]', ' ', text[i:k]))
            i = k
            continue
        if c in '"\'':
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            out.append(c + re.sub(r'[^\n]', ' ', text[i + 1:j]) + c)
            i = j + 1
            line_start = False
            continue
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            end = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:end]))
            i = end
            continue
        if text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
            continue
        out.append(c)
        line_start = c == '\n' or (line_start and c in ' \t')
        i += 1
    return ''.join(out)


def functions(text):
    """[(name, first line, last line)] of the functions of C/C++ source text (see above)."""
    code = blank(text)
    found, stack = [], []  # stack: (is_function, name, first line) per open brace
    header_start = 0
    for i, c in enumerate(code):
        if c not in '{};':
            continue
        if c == '{':
            header = code[header_start:i].strip()
            is_fn = bool(header) and (bool(TRAILER.search(header)) or bool(LAMBDA.search(header))) \
                and not CONTROL.match(header)
            transparent = re.match(r'^(?:namespace\b|extern\s*"\s*"$)', header) is not None
            if is_fn:
                first = code.count('\n', 0, header_start + (len(code[header_start:i]) -
                                                           len(code[header_start:i].lstrip()))) + 1
                name = re.findall(r'([\w:~]+)\s*\(', header)
                name = 'lambda' if '](' in header or LAMBDA.search(header) or not name else name[0]
                stack.append((True, name, first))
            else:
                stack.append((False, 'namespace' if transparent else '', 0))
        elif c == '}' and stack:
            is_fn, name, first = stack.pop()
            if is_fn:
                found.append((name, first, code.count('\n', 0, i) + 1))
        header_start = i + 1
    return found


def source_files(root):
    for folder in FOLDERS:
        for dirpath, dirnames, fs in os.walk(os.path.join(root, folder)):
            dirnames.sort()
            for f in sorted(fs):
                if f.endswith(SUFFIXES):
                    yield os.path.join(dirpath, f)


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    root = sys.argv[1]
    problems, nfiles, nfns = [], 0, 0
    for path in source_files(root):
        rel = os.path.relpath(path, root)
        with open(path, encoding='utf-8', errors='replace') as f:
            text = f.read()
        nfiles += 1
        lines = text.count('\n')
        if lines > MAX_FILE_LINES:
            problems.append('%s: %d lines (at most %d)' % (rel, lines, MAX_FILE_LINES))
        for name, first, last in functions(text):
            nfns += 1
            if last - first + 1 > MAX_FUNCTION_LINES:
                problems.append('%s:%d: function %s has %d lines (at most %d)' %
                                (rel, first, name, last - first + 1, MAX_FUNCTION_LINES))
    for p in problems:
        print(p)
    print('%d source file(s), %d function(s) checked: %s' %
          (nfiles, nfns, 'FAIL' if problems else 'ok'))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
