"""Judging recorded runs and datasets: MedSPOT's metrics (docs/protocols/medspot.md) (`scoring`), predictions
files, export to MedSPOT format and parquet, the MedSPOT coverage, replay and keyframe
validation against the live programs (`similarity`, `templates`), the HTML report."""
