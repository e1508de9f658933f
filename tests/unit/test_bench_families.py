"""The families' reset bench table (`clinigym bench --families`, and the whole bench's part):
exact rows from given timings, the ratio to the fixed scenario's reset, the aim per kind of
program."""
from clinigym.bench.families import AIMS, aim, format_families


def stats(p50, p95):
    return {"n": 10, "p50_ms": p50, "p95_ms": p95, "max_ms": p95}


def row(app, kind, family, reset, fixed, aim_ms):
    return {"app": app, "backend": kind, "family": family, "instance_reset": stats(*reset),
            "scenario_reset": stats(*fixed), "aim_p50_ms": aim_ms}


def test_rows_ratio_and_aim():
    lines = format_families([row("orthanc", "local", "orthanc/delete-study-lookalikes", (2298.4, 2392.0),
                                 (3238.0, 3300.0), 3000.0),
                             row("ohif", "docker", "ohif/open-study-lookalikes", (3001.0, 3500.0),
                                 (2500.0, 2600.0), 3000.0)]).splitlines()
    assert lines[0].split() == ["program", "backend", "family", "reset", "p50", "reset", "p95", "fixed", "p50",
                                "ratio", "aim"]
    assert lines[1].split() == ["orthanc", "local", "delete-study-lookalikes", "2298", "2392", "3238", "0.71x", "yes"]
    assert lines[2].split() == ["ohif", "docker", "open-study-lookalikes", "3001", "3500", "2500", "1.20x", "no"]


def test_the_aim_by_kind_of_program():
    assert (aim("orthanc"), aim("ohif"), aim("gnuhealth"), aim("aeskulap"), aim("itksnap")) == (
        AIMS["web"], AIMS["web"], AIMS["gnuhealth"], AIMS["desktop"], AIMS["desktop"]) == (
        3000.0, 3000.0, 3000.0, 1500.0, 1500.0)
