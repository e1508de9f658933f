"""Make ITK-SNAP open a fixture DICOM file as its whole series, from the command line.

`itksnap -g FILE.dcm` reads a single slice: ITK-SNAP guesses the format from the
extension. The format it uses instead comes from the file's "image association",
which ITK-SNAP keeps per absolute path: the preferences map the path, encoded as
the decimal codes of its bytes, to a code, and ImageAssociations/<code>.xml
holds the hints (Files.Grey.Format "DICOM Image Series" reads every slice of the
file's series). The association files are in the program file's `files:`; this
adds the mapping entries, which depend on where the fixtures are, to the
pre-seeded preferences. Standard library only (it runs on the container's python3).

Usage: python3 associate.py PREFERENCES_XML PATH=CODE [PATH=CODE ...]
(no PATH=CODE: nothing to add; a family's ${INSTANCE} may be empty)
"""
import sys
from xml.sax.saxutils import quoteattr

MARK = "<!-- image associations -->"
MAPPING = '<folder key="Mapping" >'


def encode(path):
    """SystemInterface::EncodeFilename: every byte as a decimal number, at least two digits."""
    return "".join("%02d" % b for b in path.encode())


def main():
    prefs, pairs = sys.argv[1], sys.argv[2:]
    entries = []
    for pair in pairs:
        path, code = pair.rsplit("=", 1)
        entries.append("<entry key=%s value=%s />" % (quoteattr("Element[%s]" % encode(path)), quoteattr(code)))
    with open(prefs) as f:
        text = f.read()
    if MAPPING in text:   # a second call (a task family's studies, at each reset) adds to the first's
        text = text.replace(MAPPING, MAPPING + "".join(entries), 1)
    elif MARK in text:
        text = text.replace(MARK, '<folder key="ImageAssociation" >%s%s</folder></folder>'
                            % (MAPPING, "".join(entries)))
    else:
        sys.exit("associate.py: %s has no %r line" % (prefs, MARK))
    with open(prefs, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
