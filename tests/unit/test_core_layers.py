#!/usr/bin/env python3
"""Core's rooms obey their layers (issue 33; docs/ARCHITECTURE.md, "Rooms and layers").

The table of that section gives every file of core/ a layer (a number; the first column) and
the check reads each file's #include "..." lines (comments stripped) that name a file of core/:

- a file includes no header of a higher layer than its own, with no exception: a lower room
  calls a higher one through a slot table the higher room defines (the section says which);
- core's headers include one another without a cycle;
- every .c and .h file of core/ has a row, and every name in the table is a file of core/.

Usage: test_core_layers.py SOURCE_ROOT
"""
import os
import re
import sys

from test_core_names import strip_comments

SECTION = '## Rooms and layers'


def read_table(doc):
    """{file: layer} from the section's layer table."""
    with open(doc) as f:
        text = f.read()
    start = text.find(SECTION)
    if start < 0:
        raise SystemExit('%s: section "%s" not found' % (doc, SECTION))
    end = text.find('\n## ', start + len(SECTION))
    section = text[start:end if end > 0 else len(text)]
    layers = {}
    for line in section.split('\n'):
        row = re.match(r'\|\s*(\d+)\s*\|[^|]*\|(.*)\|\s*$', line)
        if row:
            for name in re.findall(r'`([A-Za-z0-9_]+\.[ch])`', row.group(2)):
                if name in layers:
                    raise SystemExit('%s: %s has two layers' % (doc, name))
                layers[name] = int(row.group(1))
    return layers


def core_includes(core, files):
    """{file: [(line, header)]} for the includes of core's own headers."""
    out = {}
    for name in files:
        with open(os.path.join(core, name)) as f:
            code = strip_comments(f.read())
        incs = []
        for lineno, line in enumerate(code.split('\n'), 1):
            m = re.match(r'\s*#\s*include\s*"([^"]+)"', line)
            if m and m.group(1) in files:
                incs.append((lineno, m.group(1)))
        out[name] = incs
    return out


def find_cycle(graph):
    """One include cycle among the headers of graph ({header: [header]}), or None."""
    state, stack = {}, []

    def visit(h):
        state[h] = 1
        stack.append(h)
        for nxt in graph.get(h, []):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[h] = 2
        return None

    for h in sorted(graph):
        if h not in state:
            found = visit(h)
            if found:
                return found
    return None


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    root = sys.argv[1]
    core = os.path.join(root, 'core')
    files = sorted(f for f in os.listdir(core) if f.endswith(('.c', '.h')))
    layers = read_table(os.path.join(root, 'docs', 'ARCHITECTURE.md'))
    problems = ['core/%s: no layer in docs/ARCHITECTURE.md' % f for f in files
                if f not in layers]
    problems += ['docs/ARCHITECTURE.md: %s is not a file of core/' % f for f in sorted(layers)
                 if f not in files]
    includes = core_includes(core, files)
    for name in files:
        for lineno, header in includes[name]:
            if name not in layers or header not in layers or layers[header] <= layers[name]:
                continue
            problems.append('core/%s:%d: includes %s (layer %d) from layer %d' %
                            (name, lineno, header, layers[header], layers[name]))
    cycle = find_cycle({h: [i for _, i in includes[h]] for h in files if h.endswith('.h')})
    if cycle:
        problems.append('core: include cycle %s' % ' -> '.join(cycle))
    for p in problems:
        print(p)
    print('%d core file(s) in %d layers, no upward include: %s' %
          (len(files), len(set(layers.values())), 'FAIL' if problems else 'ok'))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
