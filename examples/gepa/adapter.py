"""A GEPA adapter for blis-operator policy bundles.

The candidate is {"policy_bundle": <PolicyBundle spec as YAML>}. A data instance is a dict with
the simulation seed and optionally the request count, for example {"seed": 1} or
{"seed": 2, "num_requests": 400}: each is one `blis evaluate --format gepa` run of the
candidate on examples/manifests/base.yaml. The score is the Evaluation's fitness score; the
trace (with capture_traces) is the reflection text blis prints, i.e. the Evaluation's trace
summary: outcome against the targets, the issues detected with counts and examples, the worst
routing decisions with what the router saw, and where to focus.

The class follows GEPA's adapter protocol (evaluate and make_reflective_dataset). When the gepa
package is installed its EvaluationBatch is used; otherwise an equivalent dataclass is. Only
the Python standard library is needed to run it.
"""

import dataclasses
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # keep the examples directory clean
sys.path.insert(0, os.path.join(HERE, "..", "openevolve"))
from evaluator import bundle_manifest  # noqa: E402  (shared manifest helper)

try:  # GEPA's own result type, when available.
    from gepa.core.adapter import EvaluationBatch  # type: ignore
except ImportError:  # pragma: no cover - exercised without gepa installed
    @dataclasses.dataclass
    class EvaluationBatch:  # pylint: disable=too-few-public-methods
        """The result of evaluating a candidate on a batch (GEPA's shape)."""

        outputs: list
        scores: list
        trajectories: list = None

COMPONENT = "policy_bundle"


class BlisAdapter:
    """Evaluates policy-bundle candidates with the blis CLI."""

    def __init__(self, blis_bin=None, base=None, evaluation="candidate-eval", timeout_s=600.0):
        self.blis_bin = blis_bin or os.environ.get("BLIS_BIN", "blis")
        self.base = base or os.environ.get("BLIS_BASE", os.path.join(HERE, "..", "manifests", "base.yaml"))
        self.evaluation = evaluation
        self.timeout_s = timeout_s

    def _run(self, bundle_text, inst):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "candidate.yaml")
            with open(path, "w", encoding="utf-8") as f:
                f.write(bundle_manifest(bundle_text))
            cmd = [self.blis_bin, "evaluate", "-f", self.base, "-f", path, "--evaluation", self.evaluation,
                   "--format", "gepa", "-o", "json", "--seeds", str(int(inst.get("seed", 1)))]
            if "num_requests" in inst:
                cmd += ["--num-requests", str(int(inst["num_requests"]))]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=self.timeout_s, check=False)
        if proc.returncode != 0:
            msg = proc.stderr.strip() or "blis exited with %d" % proc.returncode
            return {"score": 0.0, "reflection": "The candidate could not be evaluated: " + msg}
        return json.loads(proc.stdout)

    def evaluate(self, batch, candidate, capture_traces=False):
        """Runs the candidate on every data instance of batch."""
        outputs, scores, trajectories = [], [], []
        for inst in batch:
            out = self._run(candidate[COMPONENT], inst)
            outputs.append(out)
            scores.append(float(out["score"]))
            if capture_traces:
                trajectories.append({"data": inst, "score": out["score"], "reflection": out["reflection"]})
        return EvaluationBatch(outputs=outputs, scores=scores, trajectories=trajectories if capture_traces else None)

    def make_reflective_dataset(self, candidate, eval_batch, components_to_update):
        """Returns, per component to update, one record per evaluated instance: the inputs, the
        component's text and the feedback (the trace summary with the score)."""
        records = []
        for traj in eval_batch.trajectories or []:
            records.append({
                "Inputs": traj["data"],
                "Generated Outputs": candidate[COMPONENT],
                "Feedback": "Score %.4f (higher is better).\n%s" % (traj["score"], traj["reflection"]),
            })
        return {name: records for name in components_to_update if name == COMPONENT}


if __name__ == "__main__":
    program = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "openevolve", "initial_program.yaml")
    with open(program, encoding="utf-8") as f:
        cand = {COMPONENT: f.read()}
    adapter = BlisAdapter()
    result = adapter.evaluate([{"seed": 1}, {"seed": 2, "num_requests": 300}], cand, capture_traces=True)
    dataset = adapter.make_reflective_dataset(cand, result, [COMPONENT])
    json.dump({"scores": result.scores, "reflective_dataset": dataset}, sys.stdout, indent=2)
    sys.stdout.write("\n")
