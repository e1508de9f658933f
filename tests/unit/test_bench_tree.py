"""The tree bench's table (`clinigym bench --tree`, and the whole bench's tree part): exact
rows from given timings, the ratio to the step without the tree, and the aim met or not."""
from clinigym.bench.tree import AIM, format_tree


def stats(p50, p95):
    return {"n": 10, "p50_ms": p50, "p95_ms": p95, "max_ms": p95}


def row(app, kind, read, step, off):
    return app, kind, {"read": stats(*read), "step": stats(*step)}, stats(*off)


def test_rows_ratio_and_aim():
    lines = format_tree([row("aeskulap", "local", (22.4, 45.0), (1267.0, 1350.0), (1280.0, 1300.0)),
                         row("dicomscope", "docker", (157.0, 259.0), (1100.0, 1400.0), (1000.0, 1200.0))]).splitlines()
    assert lines[0].split() == ["program", "backend", "tree", "p50", "tree", "p95", "step", "p50", "step", "p95",
                                "vs", "off", "aim", "(steps", "observed", "as", "screenshot+a11y)"]
    assert lines[1].split() == ["aeskulap", "local", "22", "45", "1267", "1350", "0.99x", "yes"]
    assert lines[2].split() == ["dicomscope", "docker", "157", "259", "1100", "1400", "1.10x", "no"]
    assert lines[3].endswith(f"aim = read p50 <= {AIM[0]:.0f} ms and p95 <= {AIM[1]:.0f} ms")


def test_the_aim_is_both_bounds():
    over_p95 = row("gnuhealth", "local", (140.0, 401.0), (1500.0, 2000.0), (1500.0, 1900.0))
    at_bounds = row("gnuhealth", "local", (150.0, 400.0), (1500.0, 2000.0), (1500.0, 1900.0))
    assert format_tree([over_p95]).splitlines()[1].split()[-1] == "no"
    assert format_tree([at_bounds]).splitlines()[1].split()[-1] == "yes"
