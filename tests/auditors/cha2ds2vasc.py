"""Fixtures of the paper's CHA2DS2-VASc example (section 1.3): the two HDAGs of `trust.lab.demo.clinical`
and segments cut from them, as JSON files.

`write_fixtures()` (or `python -m tests.auditors.cha2ds2vasc`) writes the JSON fixtures under
tests/auditors/data/; a test checks that they equal what the builders give.
"""

from __future__ import annotations

from pathlib import Path

from trust.auditors.base import dumps_request, request_for
from trust.core.graphs.serialization import dumps
from trust.lab.demo.clinical import (
    CLINICAL_NOTE,
    FLAWED_CORRECT_STEPS,
    FLAWED_ERRORS,
    FLAWED_IDS,
    FLAWED_STEPS,
    GOAL,
    PATIENT_NOTE,
    RULES,
    SOUND_IDS,
    SOUND_STEPS,
    TASK,
    flawed_trace,
    sound_trace,
)

__all__ = [
    "CLINICAL_NOTE",
    "DATA_DIR",
    "FLAWED_CORRECT_STEPS",
    "FLAWED_ERRORS",
    "FLAWED_FILE",
    "FLAWED_IDS",
    "FLAWED_STEPS",
    "GOAL",
    "PATIENT_NOTE",
    "RULES",
    "SEGMENTS",
    "SEGMENTS_DIR",
    "SOUND_FILE",
    "SOUND_IDS",
    "SOUND_STEPS",
    "TASK",
    "flawed_trace",
    "sound_trace",
    "write_fixtures",
]

DATA_DIR = Path(__file__).parent / "data"
SOUND_FILE = DATA_DIR / "cha2ds2vasc_sound.hdag.json"
FLAWED_FILE = DATA_DIR / "cha2ds2vasc_flawed.hdag.json"
SEGMENTS_DIR = DATA_DIR / "segments"

SEGMENTS: dict[str, tuple[str, str]] = {
    "cha2ds2vasc_flawed_age.json": ("flawed", FLAWED_IDS["age_ge_75"]),
    "cha2ds2vasc_flawed_hypertension.json": ("flawed", FLAWED_IDS["hypertension"]),
    "cha2ds2vasc_flawed_vascular_sex.json": ("flawed", FLAWED_IDS["vascular_sex"]),
    "cha2ds2vasc_flawed_final.json": ("flawed", FLAWED_IDS["final"]),
    "cha2ds2vasc_sound_hypertension.json": ("sound", SOUND_IDS["hypertension"]),
    "cha2ds2vasc_sound_final.json": ("sound", SOUND_IDS["final"]),
}
"""Segment file name -> (trace, node id): the segments `trust audit-segment` examples and tests read."""


def write_fixtures() -> list[Path]:
    """Writes the two HDAG files and the segment files; returns their paths."""
    traces = {"sound": sound_trace(), "flawed": flawed_trace()}
    SEGMENTS_DIR.mkdir(parents=True, exist_ok=True)
    written = []
    for path, trace in ((SOUND_FILE, traces["sound"]), (FLAWED_FILE, traces["flawed"])):
        path.write_text(dumps(trace) + "\n", encoding="utf-8")
        written.append(path)
    for name, (which, node_id) in SEGMENTS.items():
        path = SEGMENTS_DIR / name
        path.write_text(dumps_request(request_for(traces[which], node_id)) + "\n", encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for written_path in write_fixtures():
        print(written_path)
