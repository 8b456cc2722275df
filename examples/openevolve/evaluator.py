"""OpenEvolve evaluator for blis-operator policy bundles.

The program being evolved is the spec of a PolicyBundle (YAML, see initial_program.yaml).
evaluate(program_path) wraps it into a PolicyBundle manifest named "candidate", runs
`blis evaluate --format openevolve` on it together with examples/manifests/base.yaml, and
returns the flat metrics dict (combined_score is the Evaluation's fitness score, higher is
better). Only the Python standard library is used.

Environment:
  BLIS_BIN        the blis binary (default: "blis" on PATH)
  BLIS_BASE       the manifests with the cluster, workload and Evaluation
                  (default: ../manifests/base.yaml next to this file)
  BLIS_TIMEOUT_S  seconds one evaluation may take (default: 600)
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BLIS_BIN = os.environ.get("BLIS_BIN", "blis")
BASE = os.environ.get("BLIS_BASE", os.path.join(HERE, "..", "manifests", "base.yaml"))
TIMEOUT_S = float(os.environ.get("BLIS_TIMEOUT_S", "600"))


def bundle_manifest(spec_text, name="candidate"):
    """Returns a PolicyBundle manifest whose spec is spec_text (block YAML)."""
    lines = ["apiVersion: blis.inference-sim.io/v1alpha1", "kind: PolicyBundle",
             "metadata:", "  name: " + name, "spec:"]
    body = [("  " + line) if line.strip() else "" for line in spec_text.splitlines()]
    if not any(line.strip() and not line.strip().startswith("#") for line in body):
        body.append("  {}")
    return "\n".join(lines + body) + "\n"


def run_blis(bundle_text, fmt, extra_args=()):
    """Runs blis evaluate on the base manifests and a candidate bundle; returns the decoded
    output, or raises RuntimeError with blis's message."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "candidate.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(bundle_manifest(bundle_text))
        cmd = [BLIS_BIN, "evaluate", "-f", BASE, "-f", path, "--evaluation", "candidate-eval",
               "--format", fmt, "-o", "json", *extra_args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr.strip() or "blis exited with %d" % proc.returncode)
        return json.loads(proc.stdout)


def evaluate(program_path):
    """OpenEvolve's evaluator entry point: the metrics dict of one candidate. A candidate that
    blis refuses (invalid bundle) scores 0 with error = 1."""
    with open(program_path, encoding="utf-8") as f:
        program = f.read()
    try:
        metrics = run_blis(program, "openevolve")
    except (RuntimeError, subprocess.TimeoutExpired, ValueError) as err:
        print("candidate rejected: %s" % err, file=sys.stderr)
        return {"combined_score": 0.0, "error": 1.0}
    metrics.setdefault("combined_score", 0.0)
    metrics["error"] = 0.0
    return metrics


if __name__ == "__main__":
    program = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "initial_program.yaml")
    result = evaluate(program)
    json.dump(result, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    sys.exit(0 if result.get("error") == 0.0 else 1)
