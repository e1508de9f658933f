"""Deterministic synthetic DICOM studies (numpy phantoms, no patient data).

Every UID is derived from the study's name, dates are fixed, and the pixels use
only exactly rounded arithmetic (random numbers come from a seeded bit generator's
raw bytes), so two runs write byte-identical files and the programs show identical
screens. Each modality is one row of `MODALITIES`: its storage class, pixel
format, geometry, pixels and its own header attributes.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pydicom
from pydicom.dataset import Dataset, FileDataset, FileMetaDataset
from pydicom.uid import (
    CTImageStorage,
    DigitalXRayImageStorageForPresentation,
    ExplicitVRLittleEndian,
    MRImageStorage,
    PositronEmissionTomographyImageStorage,
    UltrasoundImageStorage,
    generate_uid,
)

from clinigym.spec.cohort import Cohort, iso_day


@dataclass(frozen=True)
class StudySpec:
    key: str            # stable name, also the UID seed
    modality: str       # a key of MODALITIES: CT, MR, PT, DX, US
    patient_name: str
    patient_id: str
    birth_date: str
    sex: str
    study_description: str
    series_description: str
    body_part: str
    study_date: str
    accession: str
    slices: int = 8     # images in the series (one file each)
    size: int = 128     # rows, and columns unless `columns` is given
    columns: int = 0
    lesion: tuple[float, float] = (0.0, 0.0)   # CT, MR: the lesion moved by (rows, columns), -1..1 = the image


# The default set used by every built-in scenario (${FIXTURES}): three patients, one study each.
DEFAULT_STUDIES: tuple[StudySpec, ...] = (
    StudySpec("ct-chest", "CT", "PHANTOM^ALICE", "CG0001", "19700101", "F",
              "CT CHEST PHANTOM", "Axial 5mm", "CHEST", "20240105", "ACC1001"),
    StudySpec("mr-brain", "MR", "PHANTOM^BOB", "CG0002", "19800202", "M",
              "MR BRAIN PHANTOM", "T1 Axial", "HEAD", "20240212", "ACC1002"),
    StudySpec("ct-abdomen", "CT", "PHANTOM^CAROL", "CG0003", "19900303", "F",
              "CT ABDOMEN PHANTOM", "Axial 3mm", "ABDOMEN", "20240318", "ACC1003"),
)

# More modalities (${MODALITIES}), apart so that the programs' study lists stay as they are.
MODALITY_STUDIES: tuple[StudySpec, ...] = (
    StudySpec("pt-wholebody", "PT", "PHANTOM^DAVID", "CG0004", "19650404", "M",
              "PET WHOLE BODY PHANTOM", "FDG WB AC", "WHOLEBODY", "20240422", "ACC1004", slices=16),
    StudySpec("dx-chest", "DX", "PHANTOM^ERIN", "CG0005", "19750505", "F",
              "DX CHEST PHANTOM", "Chest PA", "CHEST", "20240527", "ACC1005", slices=1, size=512),
    StudySpec("us-abdomen", "US", "PHANTOM^FRANK", "CG0006", "19850606", "M",
              "US ABDOMEN PHANTOM", "Liver B-mode", "ABDOMEN", "20240603", "ACC1006",
              slices=1, size=480, columns=640),
)


def _uid(*parts: str) -> str:
    return generate_uid(entropy_srcs=["clinigym", *parts])


def study_uid(spec: StudySpec) -> str:
    """The study's StudyInstanceUID: the same on every machine."""
    return _uid(spec.key, "study")


def _grid(rows: int, columns: int) -> tuple[np.ndarray, np.ndarray]:
    """Normalised coordinates in [-1, 1]: (y down, x right)."""
    return np.mgrid[-1:1:complex(0, rows), -1:1:complex(0, columns)]


def _ellipse(yy, xx, cy, cx, ry, rx):
    return ((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2 <= 1


def _smooth(img: np.ndarray, n: int) -> np.ndarray:
    """Box blur of width n along both axes (edge pixels repeated)."""
    for axis in (0, 1):
        pad = [(0, 0), (0, 0)]
        pad[axis] = (n // 2, n - 1 - n // 2)
        c = np.cumsum(np.pad(img, pad, mode="edge"), axis=axis)
        c = np.concatenate([np.zeros_like(c.take([0], axis=axis)), c], axis=axis)
        end = c.shape[axis]
        img = (c.take(range(n, end), axis=axis) - c.take(range(0, end - n), axis=axis)) / n
    return img


def phantom(size: int, index: int, slices: int, modality: str,
            lesion: tuple[float, float] = (0.0, 0.0)) -> np.ndarray:
    """A Shepp-Logan-like slice: nested ellipses whose size varies along z, the lesion moved by `lesion`."""
    yy, xx = _grid(size, size)
    z = (index + 0.5) / slices * 2 - 1
    shrink = np.sqrt(max(0.05, 1 - z * z))
    # CT values are stored with intercept -1024: soft tissue 40 HU, lungs -724 HU, bone 300 HU.
    body, inner, value = (1064, 300, 1324) if modality == "CT" else (400, 200, 900)
    img = np.zeros((size, size), dtype=np.float64)
    img[_ellipse(yy, xx, 0, 0, 0.9 * shrink, 0.75 * shrink)] = body
    img[_ellipse(yy, xx, 0, -0.25, 0.4 * shrink, 0.18)] = inner
    img[_ellipse(yy, xx, 0, 0.25, 0.4 * shrink, 0.18)] = inner
    img[_ellipse(yy, xx, -0.3 + 0.2 * z + lesion[0], 0.1 + lesion[1], 0.08, 0.08)] = value
    return img.astype(np.uint16)


# PET: stored value 1000 = SUV 1 (350 MBq in 70 kg = 5000 Bq/ml, RescaleSlope 5 Bq/ml).
PET_DOSE, PET_WEIGHT, PET_SLOPE = 350_000_000, 70, 5


def pet_phantom(size: int, index: int, slices: int) -> np.ndarray:
    """An axial FDG slice of a body from head (first) to pelvis (last): SUV x 1000."""
    yy, xx = _grid(size, size)     # x: patient's left, y: posterior; 1 = 250 mm
    t = (index + 0.5) / slices     # 0 head .. 1 pelvis
    img = np.zeros((size, size))
    suv = {}                       # region -> (mask, SUV), painted in order
    if t < 0.2:
        suv["head"] = (_ellipse(yy, xx, 0, 0, 0.34, 0.3), 1.0)
        suv["brain"] = (_ellipse(yy, xx, 0, 0, 0.28, 0.24), 7.0)
    elif t < 0.27:
        suv["neck"] = (_ellipse(yy, xx, 0.05, 0, 0.2, 0.22), 1.2)
    else:
        suv["torso"] = (_ellipse(yy, xx, 0.05, 0, 0.45, 0.75), 1.0)
        if t < 0.85:                                               # arms down at the sides
            for side in (-1, 1):
                suv[f"arm{side}"] = (_ellipse(yy, xx, 0.1, 0.87 * side, 0.14, 0.08), 0.8)
        if t < 0.6:
            for side in (-1, 1):
                suv[f"lung{side}"] = (_ellipse(yy, xx, 0.02, 0.3 * side, 0.32, 0.22), 0.4)
        if 0.33 < t < 0.5:
            suv["heart"] = (_ellipse(yy, xx, -0.12, 0.12, 0.17, 0.17), 4.5)
            suv["ventricle"] = (_ellipse(yy, xx, -0.12, 0.12, 0.09, 0.09), 1.5)
        if 0.5 < t < 0.72:
            suv["liver"] = (_ellipse(yy, xx, -0.02, -0.32, 0.3, 0.3), 2.5)
        if 0.6 < t < 0.78:
            for side in (-1, 1):
                suv[f"kidney{side}"] = (_ellipse(yy, xx, 0.25, 0.3 * side, 0.1, 0.07), 4.0)
        if t > 0.85:
            suv["bladder"] = (_ellipse(yy, xx, -0.1, 0, 0.14, 0.16), 20.0)
        if 0.36 < t < 0.45:
            suv["lung nodule"] = (_ellipse(yy, xx, -0.05, -0.35, 0.05, 0.05), 9.0)
        if 0.66 < t < 0.74:
            suv["node"] = (_ellipse(yy, xx, -0.1, 0.08, 0.04, 0.04), 12.0)
    for mask, value in suv.values():
        img[mask] = value * 1000
    return img.astype(np.uint16)


def chest_radiograph(rows: int, columns: int) -> np.ndarray:
    """A PA chest projection, 12 bits, MONOCHROME2 (bone and tissue bright, lungs dark)."""
    yy, xx = _grid(rows, columns)
    img = np.full((rows, columns), 150.0)                                     # direct exposure
    body = ((xx / 0.86) ** 4 + ((yy - 0.2) / 1.05) ** 4 <= 1) | ((np.abs(xx) < 0.17) & (yy < -0.55))
    img[body] = 1900 + 250 * yy[body]
    for side in (-1, 1):
        lung = _ellipse(yy, xx, -0.02, 0.36 * side, 0.56, 0.26)
        img[lung] = 800 + 200 * yy[lung]
    heart = _ellipse(yy, xx, 0.3, 0.1, 0.27, 0.3) & body
    img[heart] = 2100
    bone = np.zeros_like(img)
    bone[(np.abs(xx) < 0.055) & body] = 550                                  # spine
    for k in range(9):                                                        # ribs
        arc = np.abs(yy - (-0.62 + 0.14 * k + 0.45 * xx ** 2)) < 0.028
        bone[arc & (np.abs(xx) > 0.07) & (np.abs(xx) < 0.66)] = 380
    clavicle = np.abs(yy - (-0.66 + 0.12 * np.abs(xx))) < 0.03
    bone[clavicle & (np.abs(xx) > 0.06) & (np.abs(xx) < 0.55)] = 500
    img = _smooth(img + bone * body, 5)
    return np.clip(np.rint(img), 0, 4095).astype(np.uint16)


# Ultrasound: a curved-array sector, apex above the image, 0.35 mm per pixel.
US_APEX, US_RADII, US_TAN, US_CM_PER_PIXEL = (-20, 320), (30, 460), 0.7, 0.035


def ultrasound_sector(rows: int, columns: int, seed: str) -> np.ndarray:
    """One 8-bit B-mode frame: Rayleigh speckle (seeded), a liver with a cyst and the diaphragm."""
    dy = np.arange(rows)[:, None] - float(US_APEX[0])
    dx = np.arange(columns)[None, :] - float(US_APEX[1])
    r = np.sqrt(dx * dx + dy * dy)
    sector = (r >= US_RADII[0]) & (r <= US_RADII[1]) & (np.abs(dx) <= US_TAN * dy)
    # Speckle: the magnitude of a sum of random phasors (approximately Gaussian components from
    # sums of uniforms), with grains longer across than along the beam.
    gen = np.random.Generator(np.random.PCG64(int(_uid(seed, "speckle").replace(".", "")[-18:])))
    u = np.frombuffer(gen.bytes(8 * rows * columns), np.uint8).reshape(8, rows, columns) / 255.0
    g1, g2 = u[:4].sum(0) - 2, u[4:].sum(0) - 2
    # Box-smoothed components have a standard deviation of 1/3 (sum of 4: 1/sqrt(3), over 9):
    # the magnitude is then Rayleigh-distributed with mean sqrt(pi/2), about 1.25.
    speckle = np.sqrt(_smooth(g1, 3) ** 2 + _smooth(g2, 3) ** 2) * (3 * np.sqrt(3))
    yy, xx = dy / US_RADII[1], dx / US_RADII[1]                  # 1 = full depth
    echo = np.ones((rows, columns))
    echo[(np.abs(xx + 0.12) < 0.1) & (yy > 0.5)] = 1.4            # posterior enhancement
    echo[r > 380 + 40 * xx] = 0.45                                # lung base, beyond the diaphragm
    echo[np.abs(r - (380 + 40 * xx)) < 5] = 2.5                   # diaphragm
    echo[_ellipse(yy, xx, 0.5, -0.12, 0.09, 0.12)] = 0.08          # cyst
    for cy, cx in ((0.35, 0.2), (0.62, 0.25)):                     # vessels
        echo[_ellipse(yy, xx, cy, cx, 0.03, 0.03)] = 0.15
    gain = 1.25 - 0.45 * yy                                       # depth attenuation after TGC
    img = np.where(sector, np.clip(speckle * echo * gain * 60, 0, 255), 0)
    for depth in range(1, int(US_RADII[1] * US_CM_PER_PIXEL) + 1):  # 1 cm depth marks
        row = int(round(depth / US_CM_PER_PIXEL)) + US_APEX[0]
        if row < rows - 1:
            img[row - 1:row + 2, columns - 24:columns - 21] = 220
    return np.rint(img).astype(np.uint8)


def _code(value: str, meaning: str, scheme: str = "SCT") -> Dataset:
    item = Dataset()
    item.CodeValue, item.CodingSchemeDesignator, item.CodeMeaning = value, scheme, meaning
    return item


def _item(**attributes) -> Dataset:
    item = Dataset()
    for name, value in attributes.items():
        setattr(item, name, value)
    return item


def _ct(spec: StudySpec, index: int) -> dict:
    return dict(ImageType=["ORIGINAL", "PRIMARY", "AXIAL"], PatientPosition="HFS",
                RescaleIntercept=-1024, RescaleSlope=1, RescaleType="HU",
                WindowCenter=[40, 400], WindowWidth=[400, 1500],
                WindowCenterWidthExplanation=["SOFT TISSUE", "LUNG"], KVP=120)


def _mr(spec: StudySpec, index: int) -> dict:
    return dict(ImageType=["ORIGINAL", "PRIMARY", "AXIAL"], PatientPosition="HFS",
                WindowCenter=300, WindowWidth=800, MagneticFieldStrength=1.5, RepetitionTime=500,
                EchoTime=15, ScanningSequence="SE", SequenceVariant="NONE", ScanOptions="",
                MRAcquisitionType="2D", EchoTrainLength=1)


def _pt(spec: StudySpec, index: int) -> dict:
    drug = _item(Radiopharmaceutical="Fluorodeoxyglucose", RadiopharmaceuticalStartTime="091500",
                 RadiopharmaceuticalStartDateTime=spec.study_date + "091500",
                 RadionuclideTotalDose=PET_DOSE, RadionuclideHalfLife=6586.2,
                 RadionuclidePositronFraction=0.9673,
                 RadionuclideCodeSequence=[_code("77004003", "^18^Fluorine")],
                 RadiopharmaceuticalCodeSequence=[_code("35321007", "Fluorodeoxyglucose F^18^")])
    orientation = _code("102538003", "recumbent")
    orientation.PatientOrientationModifierCodeSequence = [_code("40199007", "supine")]
    return dict(ImageType=["ORIGINAL", "PRIMARY"], PatientWeight=PET_WEIGHT, PatientSize=1.75,
                Units="BQML", CountsSource="EMISSION", SeriesType=["WHOLE BODY", "IMAGE"],
                NumberOfSlices=spec.slices, CorrectedImage=["DECY", "ATTN", "SCAT", "DTIM", "RAN", "NORM"],
                DecayCorrection="START", RandomsCorrectionMethod="DLYD", AttenuationCorrectionMethod="CT",
                ReconstructionMethod="OSEM 3i21s", CollimatorType="NONE",
                RadiopharmaceuticalInformationSequence=[drug],
                PatientOrientationCodeSequence=[orientation],
                PatientGantryRelationshipCodeSequence=[_code("102540008", "headfirst")],
                RescaleIntercept=0, RescaleSlope=PET_SLOPE,
                WindowCenter=15000, WindowWidth=30000, WindowCenterWidthExplanation="SUV 0-6",
                ImageIndex=index + 1, FrameReferenceTime=0, ActualFrameDuration=120000, DecayFactor=1,
                AcquisitionDate=spec.study_date, AcquisitionTime="101500", LossyImageCompression="00")


def _dx(spec: StudySpec, index: int) -> dict:
    return dict(ImageType=["ORIGINAL", "PRIMARY"], PresentationIntentType="FOR PRESENTATION",
                ViewPosition="PA", ViewCodeSequence=[_code("399348003", "postero-anterior")],
                PositionerType="COLUMN", AcquisitionContextSequence=[],
                PatientOrientation=["L", "F"], ImageLaterality="U",
                AnatomicRegionSequence=[_code("43799004", "Chest")],
                ImagerPixelSpacing=[0.8, 0.8], DetectorType="SCINTILLATOR",
                DistanceSourceToDetector=1800, DistanceSourceToPatient=1650, KVP=125, ExposureInuAs=2000,
                PixelIntensityRelationship="LOG", PixelIntensityRelationshipSign=1,
                RescaleIntercept=0, RescaleSlope=1, RescaleType="US", PresentationLUTShape="IDENTITY",
                WindowCenter=[1500, 2048], WindowWidth=[2600, 4096],
                WindowCenterWidthExplanation=["STANDARD", "FULL"],
                BurnedInAnnotation="NO", LossyImageCompression="00")


def _us(spec: StudySpec, index: int) -> dict:
    half = int(US_RADII[1] * US_TAN / np.sqrt(1 + US_TAN ** 2))   # lateral extent of the sector
    left, right, bottom = US_APEX[1] - half, US_APEX[1] + half, US_APEX[0] + US_RADII[1]
    region = _item(RegionSpatialFormat=1, RegionDataType=1, RegionFlags=0,
                   RegionLocationMinX0=left, RegionLocationMinY0=0,
                   RegionLocationMaxX1=right, RegionLocationMaxY1=bottom,
                   PhysicalUnitsXDirection=3, PhysicalUnitsYDirection=3,
                   PhysicalDeltaX=US_CM_PER_PIXEL, PhysicalDeltaY=US_CM_PER_PIXEL,
                   ReferencePixelX0=US_APEX[1] - left, ReferencePixelY0=US_APEX[0],
                   ReferencePixelPhysicalValueX=0.0, ReferencePixelPhysicalValueY=0.0,
                   TransducerFrequency=3500)
    return dict(ImageType=["ORIGINAL", "PRIMARY", "ABDOMINAL", "0001"], PatientOrientation=[],
                SequenceOfUltrasoundRegions=[region], TransducerType="CURVED LINEAR",
                TransducerData=["C5-1", "", ""], ProcessingFunction="ABDOMEN",
                WindowCenter=128, WindowWidth=256, BurnedInAnnotation="NO", LossyImageCompression="00")


@dataclass(frozen=True)
class Modality:
    """What sets one modality's files apart."""
    sop_class: str
    pixels: Callable[[StudySpec, int], np.ndarray]   # one image, uint8 or uint16
    attributes: Callable[[StudySpec, int], dict]     # its own header attributes
    bits_stored: int = 12
    slice_mm: float | None = 5.0   # cross-sectional: frame of reference and image plane; None: projection
    fov_mm: float = 200.0          # field of view across the rows (cross-sectional)


MODALITIES: dict[str, Modality] = {
    "CT": Modality(CTImageStorage, lambda s, i: phantom(s.size, i, s.slices, "CT", s.lesion), _ct),
    "MR": Modality(MRImageStorage, lambda s, i: phantom(s.size, i, s.slices, "MR", s.lesion), _mr),
    "PT": Modality(PositronEmissionTomographyImageStorage, lambda s, i: pet_phantom(s.size, i, s.slices),
                   _pt, bits_stored=16, slice_mm=30.0, fov_mm=500.0),
    "DX": Modality(DigitalXRayImageStorageForPresentation,
                   lambda s, i: chest_radiograph(s.size, s.columns or s.size), _dx, slice_mm=None),
    "US": Modality(UltrasoundImageStorage,
                   lambda s, i: ultrasound_sector(s.size, s.columns or s.size, s.key), _us,
                   bits_stored=8, slice_mm=None),
}


def _dataset(spec: StudySpec, index: int) -> FileDataset:
    kind = MODALITIES[spec.modality]
    sop_uid = _uid(spec.key, "instance", str(index))
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = kind.sop_class
    meta.MediaStorageSOPInstanceUID = sop_uid
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    meta.ImplementationClassUID = _uid("implementation")
    ds = FileDataset("", {}, file_meta=meta, preamble=b"\0" * 128)
    ds.SpecificCharacterSet = "ISO_IR 100"
    ds.SOPClassUID = kind.sop_class
    ds.SOPInstanceUID = sop_uid
    ds.StudyInstanceUID = study_uid(spec)
    ds.SeriesInstanceUID = _uid(spec.key, "series")
    ds.AcquisitionNumber = 1
    ds.PatientName = spec.patient_name
    ds.PatientID = spec.patient_id
    ds.PatientBirthDate = spec.birth_date
    ds.PatientSex = spec.sex
    ds.StudyDate = ds.SeriesDate = ds.ContentDate = spec.study_date
    ds.StudyTime = ds.SeriesTime = ds.ContentTime = "101500"
    ds.AccessionNumber = spec.accession
    ds.StudyID = spec.accession[-4:]
    ds.StudyDescription = spec.study_description
    ds.SeriesDescription = spec.series_description
    ds.ReferringPhysicianName = "REFERRER^SYNTHETIC"
    ds.InstitutionName = "clinigym synthetic"
    ds.Manufacturer = "clinigym"
    ds.Modality = spec.modality
    ds.BodyPartExamined = spec.body_part
    ds.SeriesNumber = 1
    ds.InstanceNumber = index + 1
    if kind.slice_mm is not None:
        ds.FrameOfReferenceUID = _uid(spec.key, "frame")
        ds.PositionReferenceIndicator = ""
        ds.SliceThickness = kind.slice_mm
        ds.ImagePositionPatient = [-kind.fov_mm / 2, -kind.fov_mm / 2, index * kind.slice_mm]
        ds.ImageOrientationPatient = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
        ds.SliceLocation = index * kind.slice_mm
        ds.PixelSpacing = [kind.fov_mm / spec.size, kind.fov_mm / spec.size]
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = "MONOCHROME2"
    ds.Rows, ds.Columns = spec.size, spec.columns or spec.size
    ds.BitsAllocated = 8 if kind.bits_stored <= 8 else 16
    ds.BitsStored = kind.bits_stored
    ds.HighBit = kind.bits_stored - 1
    ds.PixelRepresentation = 0
    for name, value in kind.attributes(spec, index).items():
        setattr(ds, name, value)
    ds.PixelData = kind.pixels(spec, index).tobytes()
    return ds


def write_study(spec: StudySpec, folder: Path, name: str | None = None) -> list[Path]:
    """Write one study as `folder/<name>/IMG0001.dcm...` (name: the study's key); returns the files."""
    out = folder / (name or spec.key)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(spec.slices):
        path = out / f"IMG{i + 1:04d}.dcm"
        pydicom.dcmwrite(path, _dataset(spec, i), enforce_file_format=True)
        paths.append(path)
    return paths


def cohort_studies(cohort: Cohort) -> tuple[StudySpec, ...]:
    """A generated cohort's studies (`clinigym.spec.cohort`): their UIDs from the study keys
    and accession numbers, unique within the cohort."""
    return tuple(StudySpec(f"cohort-{s.key}-{s.accession}", s.modality, p.name, p.id, p.birth_date, p.sex,
                           s.description, s.series_description, s.body_part, s.date, s.accession,
                           slices=s.slices, lesion=s.lesion)
                 for p in cohort.people for s in p.studies)


def write_studies(folder: Path, studies: tuple[StudySpec, ...] = DEFAULT_STUDIES) -> list[Path]:
    return [p for spec in studies for p in write_study(spec, folder)]


def write_instance(folder: Path, studies: tuple[StudySpec, ...]) -> list[Path]:
    """A family instance's studies as `folder/<NN>-<key>/`, NN their place in the cohort's
    (shuffled) order: a program given `${INSTANCE}/*/*.dcm` opens them in that order, so the
    task's study is not always first. Their people, in the same order, go to
    `folder/people.json` (family, given, id, birth_date as YYYY-MM-DD, sex), for a program
    that records patients rather than images (GNU Health)."""
    if not studies:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    people = {s.patient_id: s for s in studies}.values()
    (folder / "people.json").write_text(json.dumps([
        {"family": s.patient_name.split("^")[0], "given": s.patient_name.split("^")[1], "id": s.patient_id,
         "birth_date": iso_day(s.birth_date), "sex": s.sex}
        for s in people], indent=1))
    return [p for i, spec in enumerate(studies) for p in write_study(spec, folder, f"{i + 1:02d}-{spec.key}")]
