"""Zipped documents (DOCX, XLSX, PPTX, EPUB, ODF-style zips) checked before a reader opens them: what each part and
the whole archive unpack to, and how far each part inflates per packed byte, from the zip's directory; then the
parts a reader builds a tree of are streamed once through expat, counting their elements and depth and the bytes
they really unpack to (a directory can lie; zipfile itself stops a part at the size its directory gives).

A reader that parses every related part whole (python-docx, python-pptx) or a theme whole (openpyxl) would
otherwise take gigabytes from a file of a megabyte.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from pathlib import Path
from xml.parsers import expat

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats.limits import active, over_limit

RATIO_FLOOR = 1024 * 1024
"""Parts that unpack to less are not judged by their ratio: small XML parts compress very well and harm nothing."""
_STREAM_CHUNK = 64 * 1024
_XML_SUFFIXES = (".xml", ".rels", ".opf", ".ncx")


class _Stop(Exception):
    """Raised inside the expat handler to end the scan at the first limit passed."""


def is_xml(name: str) -> bool:
    return name.lower().endswith(_XML_SUFFIXES)


def check_archive(
    path: Path, data: bytes, counted: Callable[[str], bool] = is_xml, streamed: Callable[[str], bool] = lambda _: False
) -> None:
    """ExtractionError naming the limit when the zip in `data` is past one; the parts `counted` selects are
    streamed for their element count and depth. Parts its reader streams (`streamed`: a spreadsheet's sheets, read
    row by row) are held to the compression ratio only: their size is a table's, bounded by the file's and the
    worker's time. A file that is not a zip is left to its reader to report."""
    limits = active()
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        return
    with archive:
        members = [info for info in archive.infolist() if not info.is_dir()]
        total = 0
        for info in members:
            whole = not streamed(info.filename)
            _check_member(path, info, whole)
            total += info.file_size if whole else 0
        if limits.max_archive_bytes and total > limits.max_archive_bytes:
            what = f"its parts unpack to {total:,} bytes"
            raise over_limit(path, what, "max_archive_bytes", limits.max_archive_bytes)
        nodes = [0]
        for info in members:
            if counted(info.filename):
                _scan_xml(path, archive, info, nodes)


def _check_member(path: Path, info: zipfile.ZipInfo, whole: bool) -> None:
    """One part's size (when its reader holds it `whole`) and compression ratio, from the directory."""
    limits = active()
    size, packed = info.file_size, max(info.compress_size, 1)
    if whole and limits.max_archive_member_bytes and size > limits.max_archive_member_bytes:
        raise over_limit(
            path,
            f"its part {info.filename} unpacks to {size:,} bytes",
            "max_archive_member_bytes",
            limits.max_archive_member_bytes,
        )
    if limits.max_compression_ratio and size > RATIO_FLOOR and size / packed > limits.max_compression_ratio:
        raise over_limit(
            path,
            f"its part {info.filename} unpacks to {size / packed:,.0f} times its packed size (a zip bomb)",
            "max_compression_ratio",
            limits.max_compression_ratio,
        )


def _scan_xml(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo, nodes: list[int]) -> None:
    """Stream one XML part through expat, counting elements (into `nodes`, shared by the archive's parts), depth
    and unpacked bytes; ExtractionError at the first limit passed. Malformed XML is left to the reader."""
    limits = active()
    depth = [0]
    passed: list[ExtractionError] = []

    def start(_name: str, _attributes: object) -> None:
        nodes[0] += 1
        depth[0] += 1
        if limits.max_xml_nodes and nodes[0] > limits.max_xml_nodes:
            passed.append(over_limit(path, "its XML parts hold more elements", "max_xml_nodes", limits.max_xml_nodes))
            raise _Stop
        if depth[0] > limits.max_xml_depth:
            passed.append(
                over_limit(path, f"its part {info.filename} nests XML deeper", "max_xml_depth", limits.max_xml_depth)
            )
            raise _Stop

    def end(_name: str) -> None:
        depth[0] -= 1

    parser = expat.ParserCreate()
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    unpacked = 0
    try:
        with archive.open(info) as stream:
            while chunk := stream.read(_STREAM_CHUNK):
                unpacked += len(chunk)
                if limits.max_archive_member_bytes and unpacked > limits.max_archive_member_bytes:
                    raise over_limit(
                        path,
                        f"its part {info.filename} unpacks past {unpacked:,} bytes",
                        "max_archive_member_bytes",
                        limits.max_archive_member_bytes,
                    )
                parser.Parse(chunk, False)
            parser.Parse(b"", True)
    except _Stop:
        raise passed[0] from None
    except (expat.ExpatError, zipfile.BadZipFile, EOFError, OSError, ValueError, NotImplementedError):
        return  # damaged or encrypted: the reader says so in its own words
