"""The ending of the Python checks: every problem found, or one line saying what passed.

A check script imports it after putting tests/common on sys.path:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
"""


def report(problems, *ok_line):
    """Print each problem as 'FAIL: ...', or ok_line (print's arguments) when there is none;
    return the exit status (1 when there were problems, else 0)."""
    for p in problems:
        print("FAIL:", p)
    if not problems:
        print(*ok_line)
    return 1 if problems else 0
