"""Compare two screens of ``bench/simulate.py --webs ... -o FILE`` by the suite's rule.

For each web/topic in both: the mean recall at the budget before and after, the difference, and
its noise, two standard errors of the difference over runs (``2 * sqrt(se_a**2 + se_b**2)``); a
topic whose difference is below minus its noise **falls**. Then the suite's mean over the topics
in both, and the verdict: kept only when the mean rises and no topic falls.

    python bench/compare_sims.py BEFORE.json AFTER.json [--markdown]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path


def mean_and_error(values: list[float]) -> tuple[float, float]:
    mean = statistics.mean(values)
    return mean, (statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0)


def compare(before: dict, after: dict) -> tuple[list[dict], float, float, bool]:
    """Rows (case, before, after, their errors, difference, noise, verdict), the two suite means
    and whether the rule holds (the mean rises, no topic falls past its noise)."""
    rows = []
    for case in before:
        if case not in after:
            continue
        (a, sa), (b, sb) = mean_and_error(before[case]["recall"]), mean_and_error(after[case]["recall"])
        noise = 2 * math.sqrt(sa ** 2 + sb ** 2)
        diff = b - a
        verdict = "falls" if diff < -noise else ("rises" if diff > noise else "within noise")
        rows.append({"case": case, "before": a, "before_se": sa, "after": b, "after_se": sb, "diff": diff,
                     "noise": noise, "verdict": verdict})
    if not rows:
        return rows, 0.0, 0.0, False
    mean_a, mean_b = statistics.mean(r["before"] for r in rows), statistics.mean(r["after"] for r in rows)
    return rows, mean_a, mean_b, mean_b > mean_a and all(r["verdict"] != "falls" for r in rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--markdown", action="store_true", help="a markdown table")
    args = parser.parse_args(argv)
    try:
        before, after = (json.loads(path.read_text()) for path in (args.before, args.after))
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    rows, mean_a, mean_b, holds = compare(before, after)
    if not rows:
        print("error: the two screens share no web/topic", file=sys.stderr)
        return 2
    if args.markdown:
        print("| web/topic | before (se) | after (se) | difference, noise: verdict |\n|---|---|---|---|")
    for r in rows:
        if args.markdown:
            verdict = f"**{r['verdict']}**" if r["verdict"] == "falls" else r["verdict"]
            print(f"| {r['case']} | {r['before']:.3f} ({r['before_se']:.3f}) | {r['after']:.3f} ({r['after_se']:.3f}) "
                  f"| {r['diff']:+.3f}, noise {r['noise']:.3f}: {verdict} |")
        else:
            print(f"{r['case']:28} {r['before']:.3f} -> {r['after']:.3f}  {r['diff']:+.3f}  noise {r['noise']:.3f}  "
                  f"{r['verdict']}")
    line = f"suite mean over {len(rows)} topics: {mean_a:.3f} -> {mean_b:.3f} ({mean_b - mean_a:+.3f}): "
    line += "the rule holds" if holds else "the rule fails"
    print(("| mean | " + f"{mean_a:.3f} | {mean_b:.3f} | {mean_b - mean_a:+.3f}: "
           + ("holds" if holds else "fails") + " |") if args.markdown else line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
