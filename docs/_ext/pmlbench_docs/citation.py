"""CITATION.cff, read: the software's citation and the papers of the seed and of each method.

A reference's keyword ``method:<name>`` names the method plugin that implements it and
``seed`` marks the seed paper. tests/test_docs_pages.py requires a reference for every
built-in method with a paper, and the version to be the package's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[3]
CFF = ROOT / "CITATION.cff"


def load(path: Path = CFF) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def author_text(person: dict[str, Any]) -> str:
    if "family-names" in person:
        given = person.get("given-names", "")
        return f"{given} {person['family-names']}".strip()
    return "et al." if person.get("name") == "others" else str(person.get("name", ""))


def authors_text(authors: list[dict[str, Any]]) -> str:
    names = [author_text(a) for a in authors]
    if names and names[-1] == "et al.":
        return f"{', '.join(names[:-1])} et al."
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} & {names[-1]}"


def venue(reference: dict[str, Any]) -> str:
    if "conference" in reference:
        return str(reference["conference"]["name"])
    parts = [str(reference.get("journal", ""))]
    if "volume" in reference:
        parts.append(
            f"{reference['volume']}" + (f"({reference['issue']})" if "issue" in reference else "")
        )
    parts.append(str(reference.get("year", "")))
    return ", ".join(p for p in parts if p)


def reference_text(reference: dict[str, Any]) -> str:
    """One reference as text: authors, “title”, venue (pages, doi or identifier)."""
    title = " ".join(str(reference["title"]).split())
    text = f"{authors_text(reference['authors'])}, “{title}”, {venue(reference)}"
    if "start" in reference:
        text += f", pp. {reference['start']}-{reference['end']}"
    if "doi" in reference:
        text += f", doi {reference['doi']}"
    for identifier in reference.get("identifiers", []):
        text += f", {identifier['value']}"
    return text + "."


def methods_of(reference: dict[str, Any]) -> list[str]:
    return [k.split(":", 1)[1] for k in reference.get("keywords", []) if k.startswith("method:")]


def method_citations(path: Path = CFF) -> dict[str, str]:
    """Each method's papers as text, by method name."""
    found: dict[str, list[str]] = {}
    for reference in load(path).get("references", []):
        for method in methods_of(reference):
            found.setdefault(method, []).append(reference_text(reference))
    return {method: " ".join(texts) for method, texts in found.items()}


def seed_reference(path: Path = CFF) -> dict[str, Any]:
    return next(r for r in load(path)["references"] if "seed" in r.get("keywords", []))


def _bibtex_key(reference: dict[str, Any]) -> str:
    first = reference["authors"][0]
    family = first.get("family-names", first.get("name", "anon"))
    word = re.sub(r"[^a-z]", "", str(reference["title"]).split()[0].lower())
    return f"{re.sub(r'[^a-z]', '', family.lower())}{reference['year']}{word}"


def _bibtex_name(author: dict[str, Any]) -> str:
    """``Family, Given`` for a person; an entity's name (e.g. a code account) in braces, so
    BibTeX does not split it; ``others`` for CFF's et al."""
    if author.get("name") == "others":
        return "others"
    if "family-names" not in author:
        return f"{{{author.get('name', 'anon')}}}"
    return f"{author['family-names']}, {author.get('given-names', '')}".rstrip(", ")


def bibtex(reference: dict[str, Any]) -> str:
    """A BibTeX entry for a reference of CITATION.cff."""
    names = " and ".join(_bibtex_name(a) for a in reference["authors"])
    fields = {
        "author": names,
        "title": " ".join(str(reference["title"]).split()),
        "year": reference["year"],
    }
    if "conference" in reference:
        kind = "inproceedings"
        fields["booktitle"] = reference["conference"]["name"]
    elif "journal" not in reference:  # code, preprints and submitted work: no venue to name
        kind = "misc"
        if "url" in reference:
            fields["howpublished"] = f"\\url{{{reference['url']}}}"
    else:
        kind = "article"
        fields["journal"] = reference["journal"]
        for key in ("volume", "issue"):
            if key in reference:
                fields["number" if key == "issue" else key] = reference[key]
    if "start" in reference:
        fields["pages"] = f"{reference['start']}--{reference['end']}"
    if "doi" in reference:
        fields["doi"] = reference["doi"]
    for identifier in reference.get("identifiers", []):
        fields["note"] = identifier["value"]
    body = ",\n".join(f"  {key} = {{{value}}}" for key, value in fields.items())
    return f"@{kind}{{{_bibtex_key(reference)},\n{body}\n}}"


def software_bibtex(path: Path = CFF) -> str:
    cff = load(path)
    authors = " and ".join(f"{{{author_text(a)}}}" for a in cff["authors"])
    return (
        f"@software{{pmlbench,\n  author = {{{authors}}},\n  title = {{{cff['title']}}},\n"
        f"  version = {{{cff['version']}}},\n  license = {{{cff['license']}}}\n}}"
    )
