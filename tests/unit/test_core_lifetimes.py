#!/usr/bin/env python3
"""Core never calls a public lifetime call on its own objects (docs/API.md, "Lifetime verbs").

The public accel_{device,stream,event,graph,comm}_release (and their older names close and
destroy) drop the *user's* reference and refuse a release too many; core's own holders drop
theirs with the internal accel_*_release_ref (device.h, stream.h, event.h, comm_internal.h).
The two release names differ by a suffix only, so a call of the public one where the internal
one was meant compiles and quietly drops a reference the user still owns: this check fails on
any call of a public lifetime name in core/ outside the line that defines it.

Usage: test_core_lifetimes.py SOURCE_ROOT
"""
import re
import sys

from test_core_names import core_lines

PUBLIC = re.compile(r'\baccel_(?:device_(?:release|close)|(?:stream|event|graph|comm)_'
                    r'(?:release|destroy))\s*\(')
DEFINITION = re.compile(r'^accel_status_t accel_\w+\(')


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    problems = []
    for name, lineno, line in core_lines(sys.argv[1]):
        if PUBLIC.search(line) and not DEFINITION.match(line):
            problems.append('core/%s:%d: calls a public lifetime call (the user\'s reference); '
                            'core drops its own with accel_*_release_ref: %s'
                            % (name, lineno, line.strip()))
    for p in problems:
        print(p)
    print('public lifetime calls in core: %s' % ('FAIL' if problems else 'none'))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
