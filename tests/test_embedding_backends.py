"""The dense retriever's embedding backends: torch, torch-bf16, onnx and onnx-int8
(ONNX Runtime)."""

import numpy as np
import pytest

from longctx.retrieval import Corpus, build_index, embedding_backends, make_retriever
from longctx.retrieval.chunking import ChunkingConfig
from longctx.retrieval.embedders import SentenceTransformerEmbedder
from longctx.retrieval.embedding_backends import EMBEDDING_BACKENDS, resolve_backend
from longctx.retrieval.index import index_key
from longctx.retrieval.onnx_export import onnx_model_dir

TEXTS = [
    "The orchestra performed Beethoven's ninth symphony.",
    "Quarterly revenue rose 12 percent on car sales.",
]
SAPPHIRE_RAPIDS = frozenset(
    {"fpu", "avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8", "amx_tile"}
)
SKYLAKE = frozenset({"fpu", "avx2", "avx512f", "avx512bw"})
ZEN3 = frozenset({"fpu", "avx2", "fma"})

needs_bf16 = pytest.mark.skipif(
    not embedding_backends.native_bf16_cpu(), reason="this CPU has no native bfloat16"
)


@pytest.fixture
def cpu_flags(monkeypatch):
    """Pretend the CPU has the given /proc/cpuinfo flags."""

    def pretend(flags):
        monkeypatch.setattr(embedding_backends, "_cpu_flags", lambda: frozenset(flags))

    return pretend


def test_an_unknown_backend_is_refused_naming_the_option():
    with pytest.raises(
        ValueError, match=r"backend='onx'.*backend option: torch, torch-bf16, onnx, onnx-int8"
    ):
        make_retriever("dense", backend="onx")
    with pytest.raises(ValueError, match="CPU only"):
        resolve_backend("onnx", device="cuda")
    with pytest.raises(ValueError, match="CPU only"):
        resolve_backend("torch-bf16", device="cuda:0")
    assert resolve_backend(None, device="cuda") == "torch"
    assert resolve_backend(None) in EMBEDDING_BACKENDS


def test_torch_bf16_is_refused_on_a_cpu_without_native_bfloat16(cpu_flags):
    for flags in (SKYLAKE, ZEN3, ()):  # () : no flags read (not Linux, ARM)
        cpu_flags(flags)
        with pytest.raises(
            ValueError,
            match=r"torch-bf16.*native bfloat16.*amx_bf16, avx512_bf16.*use backend='torch'",
        ):
            make_retriever("dense", backend="torch-bf16")
    cpu_flags({"avx512_bf16"})
    assert resolve_backend("torch-bf16") == "torch-bf16"


def test_the_cpu_default_is_torch_bf16_only_with_native_bfloat16_flags(cpu_flags):
    cpu_flags(SAPPHIRE_RAPIDS)
    assert resolve_backend(None) == "torch-bf16"
    assert make_retriever("dense").embedder.backend == "torch-bf16"
    assert resolve_backend(None, device="cuda") == "torch"
    for flags in ({"avx512_bf16"}, {"amx_bf16"}):
        cpu_flags(flags)
        assert resolve_backend(None) == "torch-bf16"
    for flags in (SKYLAKE, ZEN3, ()):
        cpu_flags(flags)
        assert resolve_backend(None) == "torch"
        assert make_retriever("dense").embedder.backend == "torch"


def test_the_cpu_flags_are_read_from_proc_cpuinfo():
    cpuinfo = (
        "processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu avx2 avx512_bf16 amx_tile\n\n"
        "processor\t: 1\n"
    )
    assert embedding_backends.parse_cpu_flags(cpuinfo) == {"fpu", "avx2", "avx512_bf16", "amx_tile"}
    assert (
        embedding_backends.parse_cpu_flags("processor\t: 0\nFeatures\t: fp asimd bf16\n")
        == frozenset()
    )  # ARM: not read
    assert isinstance(embedding_backends._cpu_flags(), frozenset)


def test_the_backend_is_part_of_the_index_cache_key(cpu_flags):
    cpu_flags(SAPPHIRE_RAPIDS)
    corpus, chunking = Corpus.from_texts(TEXTS), ChunkingConfig()
    keys = {
        b: index_key(corpus, chunking, make_retriever("dense", backend=b))
        for b in EMBEDDING_BACKENDS
    }
    assert len(set(keys.values())) == 4
    assert make_retriever("dense", backend="torch-bf16").cache_params()["backend"] == "torch-bf16"
    # torch indexes built before backends (and fitted chunks) existed keep their key; fitted chunks
    # are other chunks
    assert make_retriever("dense", backend="torch", fit_chunks=False).cache_params() == {
        "retriever": "dense",
        "model": "all-MiniLM-L6-v2",
    }
    assert make_retriever("dense", backend="torch").cache_params() == {
        "retriever": "dense",
        "model": "all-MiniLM-L6-v2",
        "fit_chunks": True,
    }
    assert make_retriever("dense", backend="onnx-int8").cache_params()["backend"] == "onnx-int8"


@pytest.mark.slow  # an ONNX export and int8 quantization: ~4-14 s
def test_onnx_int8_is_exported_once_offline_and_agrees_with_torch(isolated_cache):
    torch_vecs = SentenceTransformerEmbedder(backend="torch").embed_documents(TEXTS)
    int8 = SentenceTransformerEmbedder(backend="onnx-int8")
    vecs = int8.embed_documents(TEXTS)
    folder = onnx_model_dir(int8._location)
    assert folder.is_relative_to(isolated_cache / "onnx")
    exported = sorted(p.name for p in (folder / "onnx").glob("*.onnx"))
    assert exported[0] == "model.onnx" and "int8" in exported[1] and len(exported) == 2
    assert vecs.shape == (2, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-4)
    assert (vecs * torch_vecs).sum(1).min() > 0.95  # int8 weights: close to, not equal to, torch
    mtimes = {p: p.stat().st_mtime_ns for p in folder.rglob("*.onnx")}
    fp32 = SentenceTransformerEmbedder(backend="onnx").embed_documents(TEXTS)  # reuses the export
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*.onnx")} == mtimes
    np.testing.assert_allclose(fp32, torch_vecs, atol=1e-4)

    corpus = Corpus.from_texts([*TEXTS, "The football team won the championship after penalties."])
    index = build_index(corpus, "dense", backend="onnx-int8")
    assert index.retriever.cache_params()["backend"] == "onnx-int8"
    assert index.search("How much did the company's income grow?", 3)[0].chunk.doc_index == 1


@needs_bf16
def test_torch_bf16_vectors_are_float32_unit_length_and_agree_with_torch():
    torch_vecs = SentenceTransformerEmbedder(backend="torch").embed_documents(TEXTS)
    bf16 = SentenceTransformerEmbedder(backend="torch-bf16")
    vecs = bf16.embed_documents(TEXTS)
    assert (
        bf16.model[0].auto_model.dtype.is_floating_point
        and str(bf16.model[0].auto_model.dtype) == "torch.bfloat16"
    )
    assert vecs.shape == (2, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-5)
    assert (vecs * torch_vecs).sum(1).min() > 0.999
    query = bf16.embed_query("How much did the company's income grow?")
    assert query.dtype == np.float32 and int(np.argmax(vecs @ query)) == 1


def test_the_cli_passes_the_embedding_backend_to_the_dense_retriever():
    from longctx.experiments.cli.app import build_parser
    from longctx.experiments.cli.options import retrieval_overrides

    args = build_parser().parse_args(
        ["index", "docs/", "--retriever", "dense", "--embedding-backend", "onnx-int8"]
    )
    assert retrieval_overrides(args)["retriever_options"] == {"backend": "onnx-int8"}
    args = build_parser().parse_args(
        ["index", "docs/", "--retriever", "dense", "--embedding-backend", "torch-bf16"]
    )
    assert retrieval_overrides(args)["retriever_options"] == {"backend": "torch-bf16"}
    args = build_parser().parse_args(["index", "docs/"])
    assert "retriever_options" not in retrieval_overrides(args)
