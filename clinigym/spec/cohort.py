"""Generated patients and studies, the same from the same seed on every machine.

A family's instance (`clinigym.spec.task_families`) draws a cohort: the task's patient, their
look-alikes (the same family name with another first name or birth date, or a name one
letter apart, so that the patient-identity audit has something to catch) and other
patients, each with studies. Every name is made up from the pools below; no real patient's
data is used.

Draws hash the family key, the seed and a label (`Draw`), so they do not depend on Python's
or NumPy's random streams, which may change between versions.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import date, timedelta

from pydantic import Field, model_validator

from clinigym.spec.files import Spec

FAMILY_NAMES = (
    "ABBOTT", "BARNES", "CARVER", "DALTON", "EASTON", "FARLEY", "GARNER", "HARMON", "IRWIN",
    "JARVIS", "KEMP", "LAWSON", "MADDEN", "NASH", "OSBORNE", "PARRISH", "QUINLAN", "RANKIN",
    "SALTER", "TALBOT", "UPTON", "VANCE", "WALKER", "YATES", "ALDEN", "BRADLEY", "COLTON",
    "DRAPER", "ELLISON", "FENWICK", "GRAYSON", "HOLLIS",
)
GIVEN_NAMES = {
    "F": ("ADA", "BEATRICE", "CLARA", "DORA", "EDITH", "FLORA", "GRETA", "HAZEL", "IRIS",
          "JUNE", "LENA", "MABEL", "NORA", "OLIVE", "PEARL", "ROSA"),
    "M": ("ALBERT", "BERNARD", "CYRIL", "DUNCAN", "EDGAR", "FELIX", "GORDON", "HUGO", "IVAN",
          "JASPER", "LEON", "MILES", "NOEL", "OSCAR", "RUFUS", "SIMON"),
}
# Studies by modality: (description, series description, body part).
STUDIES = {
    "CT": (("CT CHEST", "Axial 5mm", "CHEST"), ("CT ABDOMEN", "Axial 3mm", "ABDOMEN"),
           ("CT HEAD", "Axial 2mm", "HEAD"), ("CT PELVIS", "Axial 3mm", "PELVIS")),
    "MR": (("MR BRAIN", "T1 Axial", "HEAD"), ("MR KNEE", "PD Sagittal", "KNEE"),
           ("MR SPINE", "T2 Sagittal", "SPINE"), ("MR SHOULDER", "T1 Coronal", "SHOULDER")),
}
BIRTH_FIRST, BIRTH_DAYS = date(1935, 1, 1), 70 * 365     # birth dates 1935-01-01 .. 2004-12-13
# The day the clocks of GNU Health and Ginkgo CADx stand at (their program files): the ages
# they show are counted to it.
CLOCK_DAY = date(2024, 3, 20)
STUDY_FIRST, STUDY_DAYS = date(2018, 1, 1), 7 * 365      # study dates 2018-01-01 .. 2024-12-30
LOOKALIKE_KINDS = ("same-family-name", "other-birth-date", "one-letter")
# Train, validation and test instances name patients from disjoint parts of the pools (and
# draw disjoint values of a family's parameters): of every 8 values in a pool's order, the
# 7th is validation's and the 8th test's. None: the whole pools.
SPLITS = ("train", "validation", "test")


def split_part(values, split: str | None) -> list:
    """The part of a pool (in its order) that a split draws from."""
    if split is None:
        return list(values)
    if split not in SPLITS:
        raise ValueError(f"split: one of {', '.join(SPLITS)}, not {split!r}")
    keep = {"train": range(6), "validation": (6,), "test": (7,)}[split]
    return [v for i, v in enumerate(values) if i % 8 in keep]


class Draw:
    """Deterministic draws: each is the hash of (key, seed, label), so adding a draw under a
    new label leaves every other draw as it was."""

    def __init__(self, key: str, seed: int):
        self.prefix = f"{key}/{seed}/"

    def index(self, label: str, n: int) -> int:
        if n <= 0:
            raise ValueError(f"nothing to draw {label!r} from")
        digest = hashlib.sha256((self.prefix + label).encode()).digest()
        return int.from_bytes(digest[:8], "big") % n

    def pick(self, label: str, values):
        return values[self.index(label, len(values))]

    def between(self, label: str, low: int, high: int) -> int:
        """An integer in [low, high]."""
        return low + self.index(label, high - low + 1)

    def shuffled(self, label: str, values) -> list:
        out = list(values)
        for i in range(len(out) - 1, 0, -1):
            j = self.index(f"{label}/{i}", i + 1)
            out[i], out[j] = out[j], out[i]
        return out


@dataclass(frozen=True)
class Study:
    key: str             # unique within the cohort, also the seed of its UIDs
    modality: str
    description: str
    series_description: str
    body_part: str
    date: str            # YYYYMMDD
    accession: str
    slices: int
    lesion: tuple[float, float] = (0.0, 0.0)   # where its lesion is moved to (rows, columns; -1..1 the image)
    age: int = 0         # the patient's age in whole years on the study's date (Ginkgo CADx's "Age")

    @property
    def date_iso(self) -> str:
        return iso_day(self.date)

    @property
    def date_dmy(self) -> str:
        """25-Feb-2019: as OHIF shows it."""
        return f"{_parse_day(self.date):%d-%b-%Y}"

    @property
    def date_mdy(self) -> str:
        """02/25/2019: as Ginkgo CADx shows it."""
        return f"{_parse_day(self.date):%m/%d/%Y}"

    @property
    def date_spelled(self) -> str:
        """February 25, 2019."""
        return _spelled(self.date)


@dataclass(frozen=True)
class Person:
    family: str
    given: str
    id: str
    birth_date: str      # YYYYMMDD
    sex: str             # F or M
    studies: tuple[Study, ...]
    lookalike: str = ""  # how a look-alike resembles the task's patient (LOOKALIKE_KINDS)

    @property
    def name(self) -> str:
        """The DICOM form, as Orthanc Explorer shows it: FAMILY^GIVEN."""
        return f"{self.family}^{self.given}"

    @property
    def birth_date_iso(self) -> str:
        return iso_day(self.birth_date)

    @property
    def birth_date_spelled(self) -> str:
        """February 24, 1977."""
        return _spelled(self.birth_date)

    @property
    def age(self) -> int:
        """Whole years on `CLOCK_DAY`, as GNU Health and Ginkgo CADx count them."""
        return _years(self.birth_date, CLOCK_DAY)

    @property
    def birth_date_mdy(self) -> str:
        """02/24/1977: as GNU Health's client shows it."""
        return f"{_parse_day(self.birth_date):%m/%d/%Y}"

    @property
    def birth_date_long(self) -> str:
        """Thursday, February 24, 1977: as Orthanc Explorer shows it."""
        return f"{_parse_day(self.birth_date):%A}, {self.birth_date_spelled}"

    @property
    def orthanc_id(self) -> str:
        """Orthanc's identifier of the patient: the SHA-1 of the PatientID, in groups of 8."""
        digest = hashlib.sha1(self.id.encode()).hexdigest()
        return "-".join(digest[i:i + 8] for i in range(0, 40, 8))

    @property
    def display(self) -> str:
        """FAMILY, GIVEN: as OHIF shows it."""
        return f"{self.family}, {self.given}"


@dataclass(frozen=True)
class Cohort:
    patient: Person                  # the task's patient
    lookalikes: tuple[Person, ...]
    others: tuple[Person, ...]
    people: tuple[Person, ...]       # all of them, in the order they are loaded

    @property
    def lookalike(self) -> Person | None:
        return self.lookalikes[0] if self.lookalikes else None


class CohortSpec(Spec):
    """A family's `cohort:`: how many people and studies an instance has (inclusive ranges)."""
    others: tuple[int, int] = Field((2, 5), description="patients besides the task's patient and look-alikes")
    lookalikes: tuple[int, int] = Field((1, 2), description="look-alikes of the task's patient")
    lookalike_kinds: list[str] = Field(list(LOOKALIKE_KINDS), min_length=1, description=(
        "how look-alikes resemble the patient; leave out other-birth-date where the program shows no "
        "birth date beside the name, or the task's patient cannot be told apart"))
    studies: tuple[int, int] = Field((1, 3), description="studies per patient")
    slices: tuple[int, int] = Field((3, 8), description="images per study")
    modalities: list[str] = Field(["CT", "MR"], min_length=1)

    @model_validator(mode="after")
    def _ranges(self):
        for name in ("others", "lookalikes", "studies", "slices"):
            low, high = getattr(self, name)
            if not 0 <= low <= high:
                raise ValueError(f"{name}: [low, high] with 0 <= low <= high, not [{low}, {high}]")
        if self.studies[0] < 1 or self.slices[0] < 1:
            raise ValueError("every patient has at least one study of at least one image")
        unknown_kinds = sorted(set(self.lookalike_kinds) - set(LOOKALIKE_KINDS))
        if unknown_kinds:
            raise ValueError(f"lookalike_kinds: unknown {', '.join(unknown_kinds)}; "
                             f"known: {', '.join(LOOKALIKE_KINDS)}")
        if self.lookalikes[1] > len(self.lookalike_kinds) * 2:
            raise ValueError(f"lookalikes: at most {len(self.lookalike_kinds) * 2} (twice the lookalike_kinds)")
        unknown = sorted(set(self.modalities) - set(STUDIES))
        if unknown:
            raise ValueError(f"modalities: unknown {', '.join(unknown)}; known: {', '.join(STUDIES)}")
        if self.others[1] + self.lookalikes[1] + 1 > len(FAMILY_NAMES):
            raise ValueError(f"at most {len(FAMILY_NAMES) - 1} people besides the task's patient")
        return self

    def distinct_patients(self, split: str | None = None) -> int:
        """How many different task patients the draws can give (family name, first name,
        sex, birth date) in a split: a lower bound of the family's distinct instances."""
        return (len(split_part(FAMILY_NAMES, split)) * sum(len(split_part(g, split)) for g in GIVEN_NAMES.values())
                * BIRTH_DAYS)


def _parse_day(text: str) -> date:
    return date(int(text[:4]), int(text[4:6]), int(text[6:]))


def _years(birth: str, on: date) -> int:
    """Whole years from YYYYMMDD to `on`."""
    born = _parse_day(birth)
    return on.year - born.year - ((on.month, on.day) < (born.month, born.day))


def iso_day(text: str) -> str:
    """YYYYMMDD as YYYY-MM-DD."""
    return f"{_parse_day(text):%Y-%m-%d}"


def _spelled(text: str) -> str:
    """YYYYMMDD as 'February 24, 1977'."""
    day = _parse_day(text)
    return f"{day:%B} {day.day}, {day.year}"


def _day(first: date, offset: int) -> str:
    return (first + timedelta(days=offset)).strftime("%Y%m%d")


def _one_letter(name: str, draw: Draw, label: str) -> str:
    """The name with one inner letter replaced: JARVIS -> JERVIS."""
    i = draw.between(label + "/at", 1, len(name) - 2)
    letters = [c for c in "AEIOULNRST" if c != name[i]]
    return name[:i] + draw.pick(label + "/letter", letters) + name[i + 1:]


class _Builder:
    def __init__(self, spec: CohortSpec, draw: Draw):
        self.spec, self.draw = spec, draw
        self.ids: set[str] = set()
        self.accessions: set[str] = set()
        self.studies = 0

    def _unique(self, label: str, taken: set[str], make) -> str:
        for attempt in range(1000):
            value = make(f"{label}/{attempt}")
            if value not in taken:
                taken.add(value)
                return value
        raise RuntimeError(f"no unique value for {label}")   # 10^7 values, a few dozen people

    def studies_of(self, label: str, birth: str) -> tuple[Study, ...]:
        d, spec = self.draw, self.spec
        out = []
        kinds = d.shuffled(label + "/kinds", [(m, s) for m in spec.modalities for s in STUDIES[m]])
        for i in range(d.between(label + "/studies", *spec.studies)):
            modality, (description, series, part) = kinds[i % len(kinds)]
            self.studies += 1
            accession = self._unique(f"{label}/acc{i}", self.accessions,
                                     lambda lb: f"A{d.between(lb, 1000000, 9999999)}")
            day = _day(STUDY_FIRST, d.index(f"{label}/date{i}", STUDY_DAYS))
            out.append(Study(f"s{self.studies}", modality, description, series, part, day, accession,
                             d.between(f"{label}/slices{i}", *spec.slices),
                             (d.between(f"{label}/lesion-y{i}", -25, 25) / 100,
                              d.between(f"{label}/lesion-x{i}", -30, 30) / 100),
                             _years(birth, _parse_day(day))))
        return tuple(sorted(out, key=lambda s: s.date))

    def person(self, label: str, family: str, sex: str, given: str, birth: str, lookalike: str = "") -> Person:
        pid = self._unique(label + "/id", self.ids, lambda lb: f"P{self.draw.between(lb, 1000000, 9999999)}")
        return Person(family, given, pid, birth, sex, self.studies_of(label, birth), lookalike)

    def random_person(self, label: str, family: str, split: str | None = None) -> Person:
        d = self.draw
        sex = d.pick(label + "/sex", "FM")
        return self.person(label, family, sex, d.pick(label + "/given", split_part(GIVEN_NAMES[sex], split)),
                           _day(BIRTH_FIRST, d.index(label + "/birth", BIRTH_DAYS)))

    def lookalike(self, label: str, kind: str, of: Person) -> Person:
        d = self.draw
        if kind == "same-family-name":   # a relative: the family name, another first name
            givens = [g for g in GIVEN_NAMES[of.sex] if g != of.given]
            return self.person(label, of.family, of.sex, d.pick(label + "/given", givens),
                               _day(BIRTH_FIRST, d.index(label + "/birth", BIRTH_DAYS)), kind)
        if kind == "other-birth-date":   # the same name, born on another day of the pool's span
            born = (_parse_day(of.birth_date) - BIRTH_FIRST).days
            offset = d.between(label + "/offset", 1, BIRTH_DAYS - 1)
            return self.person(label, of.family, of.sex, of.given, _day(BIRTH_FIRST, (born + offset) % BIRTH_DAYS),
                               kind)
        return self.person(label, _one_letter(of.family, d, label), of.sex, of.given, of.birth_date, kind)


def generate(spec: CohortSpec, key: str, seed: int, split: str | None = None) -> Cohort:
    """The cohort of instance `seed` of the family `key`; the task's patient named from the
    split's part of the pools (`SPLITS`)."""
    d = Draw(key, seed)
    b = _Builder(spec, d)
    patient = b.random_person("patient", d.pick("patient/family", split_part(FAMILY_NAMES, split)), split)
    families = [f for f in d.shuffled("families", FAMILY_NAMES) if f != patient.family]
    kinds = d.shuffled("lookalike-kinds", tuple(spec.lookalike_kinds) * 2)
    lookalikes = tuple(b.lookalike(f"lookalike{i}", kinds[i], patient)
                       for i in range(d.between("lookalikes", *spec.lookalikes)))
    taken = {patient.family} | {p.family for p in lookalikes}
    free = [f for f in families if f not in taken]
    others = tuple(b.random_person(f"other{i}", free[i]) for i in range(d.between("others", *spec.others)))
    people = tuple(d.shuffled("order", (patient, *lookalikes, *others)))
    return Cohort(patient, lookalikes, others, people)
