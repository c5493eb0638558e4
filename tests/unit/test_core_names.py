#!/usr/bin/env python3
"""Core names no backend and no engine (issue 33; docs/ARCHITECTURE.md, "Direction of
dependencies"), checked the way test_kernel_docs checks docs/KERNELS.md:

- no core/ file includes a file of backends/ or engines/ (by path or by file name), and core's
  include path does not reach them (core/meson.build: include_directories('.') only);
- no string literal in core/ names a backend or an engine: the lowercase names of the folders
  under backends/ and engines/, the engine names engines/meson.build builds (rccl shares the
  nccl folder) and the plugins the build knows (meson.build, known_backend_plugins) never appear
  as a word of a string. Built-in and known plugins come from the generated table
  (backends/plugin_table.c.in), a backend's engine and native-object reason from its vtable.

Usage: test_core_names.py SOURCE_ROOT
"""
import os
import re
import sys


def strip_comments(text):
    """C source without its comments (string literals kept, so "/*" inside one survives)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            end = n if j < 0 else j + 2
            out.append(' ' + '\n' * text.count('\n', i, end))  # lines keep their numbers
            i = end
        elif text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def plugin_names(root):
    names = set()
    for folder in ('backends', 'engines'):
        for entry in os.listdir(os.path.join(root, folder)):
            if os.path.isdir(os.path.join(root, folder, entry)):
                names.add(entry)
    with open(os.path.join(root, 'engines', 'meson.build')) as f:
        names.update(re.findall(r"'name':\s*'([a-z0-9_]+)'", f.read()))
    with open(os.path.join(root, 'meson.build')) as f:
        top = f.read()
    m = re.search(r'known_backend_plugins\s*=\s*\[(.*?)\]\s*\n', top, re.S)
    if not m:
        raise SystemExit('meson.build: known_backend_plugins not found')
    names.update(n for n in re.findall(r"'([a-z0-9_]+)'", m.group(1)))
    names.update(n.replace('_', '-') for n in list(names))
    return names


def plugin_files(root):
    files = set()
    for folder in ('backends', 'engines'):
        for _, _, fs in os.walk(os.path.join(root, folder)):
            files.update(f for f in fs if f.endswith(('.h', '.c', '.hpp', '.cpp', '.in')))
    return files


def core_lines(root):
    """(file, line number, line) for every line of core's .c and .h files, comments stripped
    (shared with test_core_lifetimes.py)."""
    core = os.path.join(root, 'core')
    for fname in sorted(os.listdir(core)):
        if not fname.endswith(('.c', '.h')):
            continue
        with open(os.path.join(core, fname)) as f:
            code = strip_comments(f.read())
        for lineno, line in enumerate(code.split('\n'), 1):
            yield fname, lineno, line


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    root = sys.argv[1]
    names = plugin_names(root)
    files = plugin_files(root)
    core = os.path.join(root, 'core')
    problems = []
    for fname, lineno, line in core_lines(root):
        inc = re.match(r'\s*#\s*include\s*[<"]([^>"]+)[>"]', line)
        if inc:
            target = inc.group(1)
            if (target.startswith(('backends/', 'engines/', '../')) or
                    os.path.basename(target) in files):
                problems.append('core/%s:%d: includes %s' % (fname, lineno, target))
            continue
        for literal in re.findall(r'"((?:[^"\\]|\\.)*)"', line):
            for word in re.findall(r'[A-Za-z0-9_-]+', literal):
                if word in names:
                    problems.append('core/%s:%d: names "%s" in "%s"' %
                                    (fname, lineno, word, literal))
    with open(os.path.join(core, 'meson.build')) as f:
        inc_dirs = re.search(r"core_inc\s*=\s*include_directories\(([^)]*)\)", f.read())
    if not inc_dirs or "'..'" in inc_dirs.group(1):
        problems.append("core/meson.build: core_inc reaches beyond core/ (%s)" %
                        (inc_dirs.group(1) if inc_dirs else 'not found'))
    for p in problems:
        print(p)
    print('%d core file(s) checked against %d plugin names and %d plugin files: %s' %
          (len([f for f in os.listdir(core) if f.endswith(('.c', '.h'))]), len(names),
           len(files), 'FAIL' if problems else 'ok'))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
