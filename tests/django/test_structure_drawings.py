"""2-D drawings of references and predictions on the target page (issue 29): one coloured mark per pair."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from comparna.rna.formats import parse_dot_bracket
from comparna.services.scoring import score_prediction
from tests.factories import make_dataset, make_method_version, make_prediction, make_target

pytestmark = pytest.mark.django_db

SVG = "{http://www.w3.org/2000/svg}"
# yeast tRNA-Phe with its tertiary pair (a pseudoknot in dot-bracket)
SEQ = "GCGGAUUUAGCUCAGUUGGGAGAGCGCCAGACUGAAGAUCUGGAGGUCCUGUGUUCGAUCCACAGAAUUCGCACCA"
REF = "(((((((...(((.....[..)))..(((...........)))......((((..]....)))).)))))))...."
# a prediction: the acceptor stem and anticodon arm right, the D arm missed, two wrong pairs
PRED = "(((((((..................((((((.......))))))......((((.........)))).)))))))...."[:76]


def pair_marks(svg: bytes) -> dict[str, set[tuple[int, int]]]:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    out: dict[str, set[tuple[int, int]]] = {}
    for line in root.iter(f"{SVG}line"):
        if "data-i" not in line.attrib:  # the legend's samples
            continue
        css = line.attrib["class"].split()
        assert css[0] == "pair" and len(css) == 2
        pair = (int(line.attrib["data-i"]), int(line.attrib["data-j"]))
        assert pair not in out.get(css[1], set()), "a pair drawn twice"
        out.setdefault(css[1], set()).add(pair)
        assert line.find(f"{SVG}title") is not None  # a tooltip per pair
    return out


def test_prediction_drawing_marks_each_pair_once_as_tp_fp_or_fn(client):
    assert len(PRED) == len(SEQ) == len(REF)
    target = make_target(SEQ, REF, dataset=make_dataset())
    prediction = make_prediction(make_method_version("Folder"), target, PRED)
    score_prediction(prediction=prediction)
    reference = set(parse_dot_bracket(REF, length=76).pairs)
    predicted = set(parse_dot_bracket(PRED, length=76).pairs)

    page = client.get(f"/targets/{target.pk}/").content.decode()
    structure = f"/targets/{target.pk}/predictions/{prediction.pk}/structure.svg"
    assert structure in page and f"/targets/{target.pk}/reference/extended/structure.svg" in page

    response = client.get(structure)
    assert response.status_code == 200 and response["Content-Type"].startswith("image/svg+xml")
    marks = pair_marks(response.content)
    assert marks["tp"] == reference & predicted and marks["fp"] == predicted - reference
    assert marks["fn"] == reference - predicted
    assert marks["tp"] and marks["fp"] and marks["fn"]  # the example exercises all three
    score = prediction.scores.get(definition="extended")
    assert (len(marks["tp"]), len(marks["fp"]), len(marks["fn"])) == (score.tp, score.fp, score.fn)
    # colour-blind-safe classes: TP and FP differ in colour, FN is dashed
    style = ET.fromstring(response.content).find(f"{SVG}style").text
    assert ".tp{stroke:#0077BB}" in style and ".fp{stroke:#E67E00}" in style and "dasharray" in style


def test_reference_drawing_and_its_errors(client):
    target = make_target(SEQ, REF, dataset=make_dataset())
    response = client.get(f"/targets/{target.pk}/reference/extended/structure.svg")
    assert response.status_code == 200
    marks = pair_marks(response.content)
    assert marks == {"ref": set(parse_dot_bracket(REF, length=76).pairs)}
    root = ET.fromstring(response.content)
    assert len(root.findall(f"{SVG}circle")) == 76  # one mark per base
    assert client.get(f"/targets/{target.pk}/reference/standard/structure.svg").status_code == 404
    assert client.get(f"/targets/{target.pk}/predictions/999999/structure.svg").status_code == 404
