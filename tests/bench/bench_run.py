"""Running accel-bench with --json for the checks of this directory."""
import json
import subprocess


def run_json(cmd, problems):
    """Run cmd (an accel-bench command line with --json): its JSON document, or None. A nonzero
    exit status and stdout that is not JSON are added to problems."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if p.returncode != 0:
        problems.append(f"exit status {p.returncode}")
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        problems.append(f"stdout is not JSON: {e}\n{p.stdout}")
        return None
