"""Deterministic synthetic DICOM studies (numpy phantoms, no patient data).

Every UID is derived from the study's name, dates are fixed, so two runs
write byte-identical files and the programs show identical screens.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pydicom
from pydicom.dataset import FileDataset, FileMetaDataset
from pydicom.uid import CTImageStorage, ExplicitVRLittleEndian, MRImageStorage, generate_uid

_SOP_CLASS = {"CT": CTImageStorage, "MR": MRImageStorage}


@dataclass(frozen=True)
class StudySpec:
    key: str            # stable name, also the UID seed
    modality: str       # CT or MR
    patient_name: str
    patient_id: str
    birth_date: str
    sex: str
    study_description: str
    series_description: str
    body_part: str
    study_date: str
    accession: str
    slices: int = 8
    size: int = 128


# The default set used by every built-in scenario: three patients, one study each.
DEFAULT_STUDIES: tuple[StudySpec, ...] = (
    StudySpec("ct-chest", "CT", "PHANTOM^ALICE", "CG0001", "19700101", "F",
              "CT CHEST PHANTOM", "Axial 5mm", "CHEST", "20240105", "ACC1001"),
    StudySpec("mr-brain", "MR", "PHANTOM^BOB", "CG0002", "19800202", "M",
              "MR BRAIN PHANTOM", "T1 Axial", "HEAD", "20240212", "ACC1002"),
    StudySpec("ct-abdomen", "CT", "PHANTOM^CAROL", "CG0003", "19900303", "F",
              "CT ABDOMEN PHANTOM", "Axial 3mm", "ABDOMEN", "20240318", "ACC1003"),
)


def _uid(*parts: str) -> str:
    return generate_uid(entropy_srcs=["clinigym", *parts])


def phantom(size: int, index: int, slices: int, modality: str) -> np.ndarray:
    """A Shepp-Logan-like slice: nested ellipses whose size varies along z."""
    yy, xx = np.mgrid[-1:1:complex(0, size), -1:1:complex(0, size)]
    z = (index + 0.5) / slices * 2 - 1
    shrink = np.sqrt(max(0.05, 1 - z * z))
    # CT values are stored with intercept -1024: soft tissue 40 HU, lungs -724 HU, bone 300 HU.
    body, inner, lesion = (1064, 300, 1324) if modality == "CT" else (400, 200, 900)
    img = np.zeros((size, size), dtype=np.float64)
    img[(xx / (0.75 * shrink)) ** 2 + (yy / (0.9 * shrink)) ** 2 <= 1] = body
    img[((xx + 0.25) / 0.18) ** 2 + (yy / (0.4 * shrink)) ** 2 <= 1] = inner
    img[((xx - 0.25) / 0.18) ** 2 + (yy / (0.4 * shrink)) ** 2 <= 1] = inner
    img[((xx - 0.1) / 0.08) ** 2 + ((yy + 0.3 - 0.2 * z) / 0.08) ** 2 <= 1] = lesion
    return img.astype(np.uint16)


def _dataset(spec: StudySpec, index: int) -> FileDataset:
    sop_class = _SOP_CLASS[spec.modality]
    sop_uid = _uid(spec.key, "instance", str(index))
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = sop_class
    meta.MediaStorageSOPInstanceUID = sop_uid
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    meta.ImplementationClassUID = _uid("implementation")
    ds = FileDataset("", {}, file_meta=meta, preamble=b"\0" * 128)
    ds.SpecificCharacterSet = "ISO_IR 100"
    ds.SOPClassUID = sop_class
    ds.SOPInstanceUID = sop_uid
    ds.StudyInstanceUID = _uid(spec.key, "study")
    ds.SeriesInstanceUID = _uid(spec.key, "series")
    ds.FrameOfReferenceUID = _uid(spec.key, "frame")
    ds.PositionReferenceIndicator = ""
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
    ds.ImageType = ["ORIGINAL", "PRIMARY", "AXIAL"]
    ds.PatientPosition = "HFS"
    thickness = 5.0
    ds.SliceThickness = thickness
    ds.ImagePositionPatient = [-100.0, -100.0, index * thickness]
    ds.ImageOrientationPatient = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    ds.SliceLocation = index * thickness
    ds.PixelSpacing = [200.0 / spec.size, 200.0 / spec.size]
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = "MONOCHROME2"
    ds.Rows = ds.Columns = spec.size
    ds.BitsAllocated = 16
    ds.BitsStored = 12
    ds.HighBit = 11
    ds.PixelRepresentation = 0
    if spec.modality == "CT":
        ds.RescaleIntercept = -1024
        ds.RescaleSlope = 1
        ds.RescaleType = "HU"
        ds.WindowCenter = [40, 400]
        ds.WindowWidth = [400, 1500]
        ds.WindowCenterWidthExplanation = ["SOFT TISSUE", "LUNG"]
        ds.KVP = 120
    else:
        ds.WindowCenter = 300
        ds.WindowWidth = 800
        ds.MagneticFieldStrength = 1.5
        ds.RepetitionTime = 500
        ds.EchoTime = 15
        ds.ScanningSequence = "SE"
        ds.SequenceVariant = "NONE"
        ds.ScanOptions = ""
        ds.MRAcquisitionType = "2D"
        ds.EchoTrainLength = 1
    ds.PixelData = phantom(spec.size, index, spec.slices, spec.modality).tobytes()
    return ds


def write_study(spec: StudySpec, folder: Path) -> list[Path]:
    """Write one study as `folder/<key>/IMG0001.dcm...`; returns the files."""
    out = folder / spec.key
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(spec.slices):
        path = out / f"IMG{i + 1:04d}.dcm"
        pydicom.dcmwrite(path, _dataset(spec, i), enforce_file_format=True)
        paths.append(path)
    return paths


def write_studies(folder: Path, studies: tuple[StudySpec, ...] = DEFAULT_STUDIES) -> list[Path]:
    return [p for spec in studies for p in write_study(spec, folder)]
