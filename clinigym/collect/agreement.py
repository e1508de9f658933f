"""`clinigym agreement A.json B.json`: how well two annotators' boxes agree.

Both files are MedSPOT-format annotation files (`<Software>_Annotation.json`) of the
same tasks. Tasks are matched by their index in the file, steps by `step_id`; the
first ground-truth action's `bbox` (percent `[x, y, w, h]`) of each is compared.
IoU is computed in percent units, which gives the IoU of the pixel boxes at any
image size (both axes scale both boxes alike). A step agrees when IoU >= 0.5.
Steps that only one file has, or that have no action in one of them, are listed
as unmatched and left out of the means.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from clinigym.collect.boxes import iou
from clinigym.spec.medspot import read_file

AGREE_IOU = 0.5


def iou_xywh(a, b) -> float:
    """IoU of two MedSPOT boxes `[x, y, w, h]`."""
    return iou([a[0], a[1], a[0] + a[2], a[1] + a[3]], [b[0], b[1], b[0] + b[2], b[1] + b[3]])


@dataclass
class StepAgreement:
    task: int
    step_id: int
    iou: float
    agree: bool
    overview: str = ""


@dataclass
class Agreement:
    file_a: str
    file_b: str
    threshold: float
    steps: list[StepAgreement] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)

    @property
    def mean_iou(self) -> float | None:
        return sum(s.iou for s in self.steps) / len(self.steps) if self.steps else None

    @property
    def agreement_rate(self) -> float | None:
        return sum(s.agree for s in self.steps) / len(self.steps) if self.steps else None

    def to_json(self) -> dict:
        return {**asdict(self), "n_steps": len(self.steps), "mean_iou": self.mean_iou,
                "agreement_rate": self.agreement_rate}


def compare(file_a: Path, file_b: Path, threshold: float = AGREE_IOU) -> Agreement:
    tasks_a, tasks_b = read_file(Path(file_a)), read_file(Path(file_b))
    result = Agreement(str(file_a), str(file_b), threshold)
    if len(tasks_a) != len(tasks_b):
        result.unmatched.append(f"{file_a} has {len(tasks_a)} tasks, {file_b} has {len(tasks_b)}")
    for i, (ta, tb) in enumerate(zip(tasks_a, tasks_b)):
        if ta.overview != tb.overview:
            result.unmatched.append(f"task {i}: overviews differ ({ta.overview!r} / {tb.overview!r})")
        steps_b = {s.step_id: s for s in tb.steps}
        for sa in ta.steps:
            sb = steps_b.pop(sa.step_id, None)
            if sb is None:
                result.unmatched.append(f"task {i} step {sa.step_id}: only in {file_a}")
            elif not sa.actions or not sb.actions:
                result.unmatched.append(f"task {i} step {sa.step_id}: no action in "
                                        f"{file_a if not sa.actions else file_b}")
            else:
                v = iou_xywh(sa.actions[0].bbox, sb.actions[0].bbox)
                result.steps.append(StepAgreement(i, sa.step_id, v, v >= threshold, ta.overview))
        result.unmatched += [f"task {i} step {sid}: only in {file_b}" for sid in sorted(steps_b)]
    for i in range(min(len(tasks_a), len(tasks_b)), max(len(tasks_a), len(tasks_b))):
        result.unmatched.append(f"task {i}: only in {file_a if len(tasks_a) > len(tasks_b) else file_b}")
    return result


def format_table(result: Agreement) -> str:
    lines = [f"{'task':>4} {'step':>4} {'IoU':>6}  agree  overview"]
    for s in result.steps:
        lines.append(f"{s.task:>4} {s.step_id:>4} {s.iou:6.3f}  {'yes' if s.agree else 'no ':<5}  {s.overview}")
    mean, rate = result.mean_iou, result.agreement_rate
    lines.append("")
    lines.append(f"steps compared: {len(result.steps)}   mean IoU: {'-' if mean is None else f'{mean:.3f}'}   "
                 f"agreement (IoU >= {result.threshold:g}): {'-' if rate is None else f'{100 * rate:.1f}%'}")
    lines += [f"unmatched: {u}" for u in result.unmatched]
    return "\n".join(lines)
