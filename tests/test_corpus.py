import json

import pytest

from longctx.retrieval import Corpus, CorpusError, Document


def minimal_pdf(text: str) -> bytes:
    """A one-page PDF showing ``text`` in Helvetica, with a correct xref table."""
    stream = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << "
            b"/Font << /F1 5 0 R >> >> >>"
        ),
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def test_from_texts_titles_and_len():
    corpus = Corpus.from_texts(["alpha beta", "gamma"], titles=["A", "B"])
    assert len(corpus) == 2
    assert [d.title for d in corpus] == ["A", "B"]
    assert corpus.num_tokens == 3
    assert Corpus.from_texts(["x"])[0].title == "Document 1"


def test_fingerprint_is_stable_and_content_sensitive():
    a = Corpus.from_texts(["one", "two"])
    assert a.fingerprint == Corpus.from_texts(["one", "two"]).fingerprint
    assert a.fingerprint != Corpus.from_texts(["two", "one"]).fingerprint
    assert a.fingerprint != Corpus.from_texts(["one", "two"], titles=["x", "y"]).fingerprint
    # boundaries matter: ("ab","c") differs from ("a","bc")
    assert Corpus.from_texts(["ab", "c"]).fingerprint != Corpus.from_texts(["a", "bc"]).fingerprint


@pytest.mark.parametrize("texts", [[], [""], ["  ", "\n"]])
def test_empty_corpus_is_an_error(texts):
    with pytest.raises(CorpusError, match="empty"):
        Corpus.from_texts(texts)


def test_titles_must_match_texts():
    with pytest.raises(CorpusError):
        Corpus.from_texts(["a", "b"], titles=["only one"])


def test_duplicate_ids_are_an_error():
    with pytest.raises(CorpusError, match="unique"):
        Corpus([Document("1", "a"), Document("1", "b")])


def test_from_documents_accepts_llama_index_and_langchain_documents():
    from langchain_core.documents import Document as LCDocument
    from llama_index.core import Document as LIDocument

    corpus = Corpus.from_documents(
        [
            LIDocument(text="from llama", metadata={"title": "LI"}),
            LCDocument(page_content="from langchain", metadata={"title": "LC"}),
        ]
    )
    assert [d.text for d in corpus] == ["from llama", "from langchain"]
    assert [d.title for d in corpus] == ["LI", "LC"]
    with pytest.raises(CorpusError):
        Corpus.from_documents([42])


def test_from_path_reads_every_supported_type(tmp_path):
    (tmp_path / "a.txt").write_text("plain text file", encoding="utf-8")
    (tmp_path / "b.md").write_text("# Heading\nmarkdown body", encoding="utf-8")
    (tmp_path / "c.json").write_text(
        json.dumps([{"title": "J1", "text": "json one"}, {"title": "J2", "content": "json two"}])
    )
    (tmp_path / "d.jsonl").write_text(
        '{"id": 7, "text": "line one"}\n\n{"text": "line two", "title": "L2"}\n'
    )
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "e.html").write_text(
        "<html><body><p>html paragraph about zebras</p></body></html>"
    )
    (tmp_path / "f.pdf").write_bytes(minimal_pdf("pdf words about giraffes"))
    (tmp_path / "ignored.bin").write_bytes(b"\x00\x01")
    corpus = Corpus.from_path(tmp_path)
    texts = {d.doc_id: d.text for d in corpus}
    assert texts["a.txt"] == "plain text file"
    assert "markdown body" in texts["b.md"]
    assert texts["c.json#0"] == "json one" and texts["c.json#1"] == "json two"
    assert texts["d.jsonl#7"] == "line one"
    assert "zebras" in texts["sub/e.html"]
    assert "giraffes" in texts["f.pdf"]
    assert corpus[[d.doc_id for d in corpus].index("c.json#1")].title == "J2"
    assert len(corpus) == 8  # 2 json + 2 jsonl records, 4 other files


def test_single_file_path(tmp_path):
    path = tmp_path / "one.txt"
    path.write_text("just one", encoding="utf-8")
    assert [d.text for d in Corpus.from_path(path)] == ["just one"]


def test_missing_path_is_named(tmp_path):
    with pytest.raises(CorpusError, match="does not exist"):
        Corpus.from_path(tmp_path / "nope")


def test_undecodable_file_is_named(tmp_path):
    (tmp_path / "good.txt").write_text("fine", encoding="utf-8")
    (tmp_path / "bad.txt").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(CorpusError, match="bad.txt.*UTF-8"):
        Corpus.from_path(tmp_path)


def test_rst_is_read_as_text(tmp_path):
    (tmp_path / "guide.rst").write_text("Guide\n=====\n\nThe vault code is 4417.", encoding="utf-8")
    (doc,) = Corpus.from_path(tmp_path)
    assert doc.doc_id == "guide.rst" and doc.title == "guide" and "vault code is 4417" in doc.text


def test_skipped_files_are_named(tmp_path, caplog):
    (tmp_path / "a.txt").write_text("kept", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.docx").write_bytes(b"\x00")
    (tmp_path / "y.bin").write_bytes(b"\x00")
    with caplog.at_level("WARNING", logger="longctx.retrieval.readers"):
        assert len(Corpus.from_path(tmp_path)) == 1
    assert "Skipped 2 file(s)" in caplog.text and "sub/x.docx, y.bin" in caplog.text


def test_folder_without_supported_files(tmp_path):
    (tmp_path / "x.bin").write_bytes(b"\x00")
    with pytest.raises(CorpusError, match="No readable documents"):
        Corpus.from_path(tmp_path)


def test_invalid_json_names_file_and_line(tmp_path):
    (tmp_path / "broken.jsonl").write_text('{"text": "ok"}\n{not json\n')
    with pytest.raises(CorpusError, match="line 2 of .*broken.jsonl"):
        Corpus.from_path(tmp_path)
